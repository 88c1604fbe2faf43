//! The `[[ ]]` deployment-variable templating applied to manifests and envVarsYaml
//! (edgexr/edge-cloud-platform@eb39b06ec `pkg/deployvars/deployment-vars.go:52-72`: Go's
//! `text/template` with the App's delimiters, data `DeploymentReplaceVars`). Only what a
//! client can hit is modelled, with the default delimiters `[[ ]]` (the provider sets no
//! `template_delimiter`): `[[ .Deployment.<Field> ]]` is replaced; an action that is
//! not closed, is empty or calls a function fails to parse; any other field fails to execute.
//! The error texts follow Go's shapes; their line/column details are not reproduced.

/// The variables of `CrmReplaceVars` and the values CreateApp validates with
/// (`TestReplacementVars`, main `pkg/k8smgmt/manifest.go:45-54`).
const TEST_VARS: [(&str, &str); 7] = [
    ("ClusterIp", "99.99.99.99"),
    ("ClusterIPV6", ""),
    ("CloudletName", "dummyCloudlet"),
    ("ClusterName", "dummyCluster"),
    ("CloudletOrg", "dummyCloudletOrg"),
    ("AppOrg", "dummyAppOrg"),
    ("DnsZone", "dummy.net"),
];

fn parse_error(detail: &str) -> String {
    format!(
        "Error with parsing template: varsReplaceTemplate: {detail}, try changing templatedelimiter in app definition"
    )
}

/// `text` with its actions replaced, or the error ReplaceDeploymentVars gives.
pub(crate) fn replace_vars(text: &str) -> Result<String, String> {
    let (open, close) = ("[[", "]]");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        out.push_str(&rest[..start]);
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(close) else {
            return Err(parse_error("unclosed action"));
        };
        let action = after[..end].trim();
        rest = &after[end + close.len()..];
        if action.is_empty() {
            return Err(parse_error("missing value for command"));
        }
        if let Some(path) = action.strip_prefix('.') {
            let value = path
                .strip_prefix("Deployment.")
                .and_then(|field| TEST_VARS.iter().find(|(name, _)| *name == field))
                .map(|(_, value)| *value);
            match value {
                Some(v) => out.push_str(v),
                None => {
                    return Err(format!(
                        "template: varsReplaceTemplate: executing \"varsReplaceTemplate\" at <.{path}>: can't evaluate field {} in type *deployvars.DeploymentReplaceVars",
                        path.split('.').next().unwrap_or(path)
                    ))
                }
            }
        } else {
            let name: String = action
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            return Err(parse_error(&format!("function \"{name}\" not defined")));
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_variables_are_replaced() {
        assert_eq!(
            replace_vars("ip=[[ .Deployment.ClusterIp ]]").unwrap(),
            "ip=99.99.99.99"
        );
        assert_eq!(replace_vars("no actions").unwrap(), "no actions");
    }

    #[test]
    fn anything_else_fails() {
        assert!(replace_vars("a[[b]]")
            .unwrap_err()
            .contains("function \"b\" not defined"));
        assert!(replace_vars("a[[b")
            .unwrap_err()
            .contains("unclosed action"));
        assert!(replace_vars("[[ .Foo ]]")
            .unwrap_err()
            .contains("can't evaluate field Foo"));
    }
}
