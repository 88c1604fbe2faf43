//! What the container of an App would actually get on the edge site: the command and
//! arguments after YAML read the generated manifest (kubernetes) or after docker's argument
//! rules, and the environment after envVarsYaml templating and parsing (kubernetes) or the
//! docker env file. Also why a deployment fails on the site.

use std::collections::BTreeMap;

use serde::Serialize;

use super::manifest::{split_command, trimmed_args};
use super::template::replace_vars;
use super::yaml_word::{self, YamlWord};
use crate::model::App;

/// The container as the site would start it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct ContainerSpec {
    /// `kubernetes` or `docker` (or another deployment, not modelled further).
    pub deployment: String,
    /// The image.
    pub image: String,
    /// Kubernetes `command` (the entrypoint override); empty for docker.
    pub command: Vec<String>,
    /// Kubernetes `args`; for docker every argument after the image (`command` as one).
    pub args: Vec<String>,
    /// The environment.
    pub env: BTreeMap<String, String>,
}

/// A word as the container gets it (only words CreateApp accepted reach here).
fn as_read(word: String) -> String {
    match yaml_word::read(&word) {
        YamlWord::Changed(changed) => changed,
        _ => word,
    }
}

/// The `- name: X` / `value: Y` entries of an envVarsYaml document, after templating, or
/// the error GetAppEnvVars gives (main `pkg/k8smgmt/manifest.go:253-279`: "cannot unmarshal
/// env vars: <cfg> - <err>"). The YAML decoder (go-yaml v2) stores any scalar's text in a
/// string field, so `yes` or `5` stay as written; nulls become "", quotes are removed,
/// comments cut. Forms other than a block list are not modelled (accepted, not read).
pub(crate) fn env_vars_yaml(app: &App) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for cfg in app.configs.iter().filter(|c| c.kind == "envVarsYaml") {
        let text = replace_vars(&cfg.config)?;
        let fail = |line: usize, err: String| {
            format!(
                "cannot unmarshal env vars: {text} - yaml: {err}",
                err = err.replace("{line}", &line.to_string())
            )
        };
        let mut item: Option<(String, String)> = None;
        let mut key_indent = 0usize;
        let mut first = true;
        for (n, raw) in text.lines().enumerate() {
            let line_no = n + 1;
            let trimmed = raw.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed == "---" {
                continue;
            }
            let indent = raw.len() - trimmed.len();
            let mut body = trimmed;
            if let Some(rest) = trimmed
                .strip_prefix("- ")
                .or((trimmed == "-").then_some(""))
            {
                if let Some(done) = item.take() {
                    out.push(done);
                }
                item = Some((String::new(), String::new()));
                key_indent = indent + 2 + (rest.len() - rest.trim_start().len());
                body = rest.trim_start();
                if body.is_empty() {
                    first = false;
                    continue;
                }
            } else if first {
                if trimmed.starts_with('[') {
                    // A flow list: not read here.
                    break;
                }
                return Err(fail(
                    line_no,
                    "unmarshal errors:\n  line {line}: cannot unmarshal !!map into []v1.EnvVar"
                        .into(),
                ));
            } else if indent > key_indent {
                // Nested under another key (valueFrom: ...).
                continue;
            }
            first = false;
            let Some((key, value)) = body.split_once(':') else {
                return Err(fail(
                    line_no,
                    "line {line}: could not find expected ':'".into(),
                ));
            };
            let value = value.trim();
            let value = match yaml_word::read(value) {
                YamlWord::Same => value.to_string(),
                YamlWord::Changed(v) => v,
                YamlWord::NotAString("a boolean" | "a number") => value.to_string(),
                YamlWord::NotAString(_) if key.trim() != "name" && key.trim() != "value" => {
                    continue;
                }
                YamlWord::NotAString(kind) => {
                    let tag = if kind == "a sequence" {
                        "!!seq"
                    } else {
                        "!!map"
                    };
                    return Err(fail(
                        line_no,
                        format!("unmarshal errors:\n  line {{line}}: cannot unmarshal {tag} into string"),
                    ));
                }
                YamlWord::Invalid(msg) => {
                    return Err(fail(line_no, format!("line {{line}}: {msg}")))
                }
            };
            if let Some((name, val)) = item.as_mut() {
                match key.trim() {
                    "name" => *name = value,
                    "value" => *val = value,
                    _ => {}
                }
            }
        }
        if let Some(done) = item.take() {
            out.push(done);
        }
    }
    Ok(out)
}

/// Docker's `--env-file` reading of the `k=v` lines the platform writes (main
/// `pkg/dockermgmt/dockerapp.go:414-430`; docker's env-file rules: leading blanks trimmed,
/// blank and `#` lines skipped, a line without `=` names a variable taken from the host's
/// environment (absent here), a name with whitespace is an error). A value with a newline
/// therefore ends at the newline and its next line is read as another entry.
pub(crate) fn docker_env_file(app: &App) -> Result<BTreeMap<String, String>, String> {
    let mut file = String::new();
    for (k, v) in &app.env_vars {
        file.push_str(&format!("{k}={v}\n"));
    }
    if !app.secrets_wiped {
        for (k, v) in &app.secret_env_vars.0 {
            file.push_str(&format!("{k}={v}\n"));
        }
    }
    let mut env = BTreeMap::new();
    for line in file.lines() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (line, None),
        };
        if name.is_empty() {
            return Err(format!("no variable name on line '{line}'"));
        }
        if name.chars().any(char::is_whitespace) {
            // docker/cli `opts/envfile.go`; how the platform wraps docker's failure is not
            // in the public source.
            return Err(format!(
                "poorly formatted environment: variable '{name}' contains whitespaces"
            ));
        }
        if let Some(v) = value {
            env.insert(name.to_string(), v.to_string());
        }
    }
    Ok(env)
}

/// The container of `app`, or why the site cannot start it.
pub(crate) fn container_of(app: &App) -> Result<ContainerSpec, String> {
    let mut spec = ContainerSpec {
        deployment: app.deployment.clone(),
        image: app.image_path.clone(),
        ..ContainerSpec::default()
    };
    match app.deployment.as_str() {
        "kubernetes" => {
            spec.command = split_command(&app.command)
                .into_iter()
                .map(as_read)
                .collect();
            spec.args = trimmed_args(&app.command_args)
                .into_iter()
                .map(as_read)
                .collect();
            spec.env = app.env_vars.clone();
            if !app.secrets_wiped {
                spec.env.extend(app.secret_env_vars.0.clone());
            }
            spec.env.extend(env_vars_yaml(app)?);
        }
        "docker" => {
            // `dockerapp.go:432-444`: the whole command is ONE argument after the image
            // (the image's CMD, not an entrypoint override), then each non-empty argument.
            let command = app.command.trim();
            if !command.is_empty() {
                spec.args.push(command.to_string());
            }
            spec.args.extend(
                app.command_args
                    .iter()
                    .map(|a| a.trim().to_string())
                    .filter(|a| !a.is_empty()),
            );
            spec.env = docker_env_file(app)?;
        }
        _ => {}
    }
    Ok(spec)
}

/// Why deploying `app` fails on the site, if it does: secret env vars listed but gone from
/// Vault (main `pkg/k8smgmt/manifest.go:329-336`, `pkg/dockermgmt/dockerapp.go:405-412`), a
/// manifest whose `[[ ]]` templating fails (`manifest.go:289-301`), an envVarsYaml that does
/// not parse, or an env file docker refuses. The site's error reaches the stream as this
/// text; whether it is prefixed on the way is not visible in the public source.
pub(crate) fn deploy_error(app: &App) -> Option<String> {
    if app.secrets_wiped && !app.secret_env_vars.is_empty() {
        return Some(format!(
            "failed to get the correct number of App secret vars from encrypted storage, expected {} but only got 0",
            app.secret_env_vars.0.len()
        ));
    }
    if app.deployment == "kubernetes" {
        if let Err(e) = replace_vars(&app.deployment_manifest) {
            return Some(e);
        }
    }
    container_of(app).err()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::values::ConfigFile;

    fn app(deployment: &str) -> App {
        App {
            deployment: deployment.into(),
            image_path: "docker.io/library/x:1".into(),
            ..App::default()
        }
    }

    #[test]
    fn docker_gets_the_command_as_one_argument() {
        let mut a = app("docker");
        a.command = " /run.sh --once ".into();
        a.command_args = vec!["--labels".into(), " ".into(), "a,b".into()];
        let spec = container_of(&a).unwrap();
        assert_eq!(spec.args, ["/run.sh --once", "--labels", "a,b"]);
        assert!(spec.command.is_empty());
    }

    #[test]
    fn docker_env_files_split_values_at_newlines() {
        let mut a = app("docker");
        a.env_vars.insert("A".into(), "1\nINJECTED=2".into());
        a.env_vars.insert("B".into(), "x\nHOME_ONLY".into());
        let env = container_of(&a).unwrap().env;
        assert_eq!(env.get("A").map(String::as_str), Some("1"));
        assert_eq!(env.get("INJECTED").map(String::as_str), Some("2"));
        assert_eq!(env.get("B").map(String::as_str), Some("x"));
        assert!(!env.contains_key("HOME_ONLY"));
        a.env_vars.insert("C".into(), "line one\nline two".into());
        assert_eq!(
            container_of(&a).unwrap_err(),
            "poorly formatted environment: variable 'line two' contains whitespaces"
        );
    }

    #[test]
    fn env_vars_yaml_is_templated_and_read() {
        let mut a = app("kubernetes");
        a.configs = vec![ConfigFile {
            kind: "envVarsYaml".into(),
            config: "- name: IP\n  value: \"[[ .Deployment.ClusterIp ]]\"\n- name: FLAG\n  value: yes\n- name: EMPTY\n  value: ~\n".into(),
        }];
        let env = env_vars_yaml(&a).unwrap();
        assert_eq!(
            env,
            [
                ("IP".to_string(), "99.99.99.99".to_string()),
                ("FLAG".into(), "yes".into()),
                ("EMPTY".into(), String::new())
            ]
        );
        a.configs[0].config = "- name: X\n  value: [[ oops ]]\n".into();
        assert!(env_vars_yaml(&a)
            .unwrap_err()
            .contains("function \"oops\" not defined"));
        a.configs[0].config = "X: 1\n".into();
        assert!(env_vars_yaml(&a)
            .unwrap_err()
            .starts_with("cannot unmarshal env vars: X: 1\n - yaml: unmarshal errors"));
    }
}
