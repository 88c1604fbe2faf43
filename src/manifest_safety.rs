//! What survives Edge Connect's way of turning an App into a running container.
//!
//! The controller does not pass `command`, `command_args` and environment values through as
//! data. Verified in edgexr/edge-cloud-platform (docs/edge-connect-behaviours.md B5 and B6):
//!
//! - kubernetes: the `kubernetes-basic` generator splits `command` on spaces outside double
//!   quotes and pastes every word and every argument unquoted as `- {{.}}` into the manifest's
//!   YAML (main `pkg/deploygen/kube.go:204-215, 299-309`); the manifest then goes through `[[ ]]`
//!   template processing (`pkg/k8smgmt/manifest.go:253-297`) and is decoded with YAML 1.1 rules
//!   into `[]string`. A word YAML reads as anything but itself (`yes`, `~`, `1e3`, `a: b`,
//!   `#x`, `"quoted"`) fails CreateApp or changes what the container runs. envVarsYaml is
//!   `[[ ]]`-templated too before it is parsed (`pkg/controller/app_api.go:656-675`).
//! - docker: main adds `command` as one argument after the image (`pkg/dockermgmt/dockerapp.go:
//!   414-444`), older releases paste it into a `docker run` shell line; `command_args` are not
//!   used at all; environment values go to an env file of `k=v` lines.
//!
//! Which docker behaviour a given Edge Connect has is not visible from outside, so the docker
//! rule accepts only what both keep intact: a single word of shell-safe characters and no
//! arguments. Everything is refused before the first API call, with the value and the reason.

use crate::config::{Deployment, EnvDelivery};

/// Checks a container command and its arguments for `deployment`. `key` names where they came
/// from (`edge_connect.command`, `extra_specs.command`) in the message.
pub fn check_command(
    deployment: Deployment,
    key: &str,
    command: Option<&str>,
    args: &[String],
) -> Result<(), String> {
    let command = command.filter(|c| !c.is_empty());
    match deployment {
        Deployment::Kubernetes => {
            if let Some(command) = command {
                for word in command.split(' ').filter(|w| !w.is_empty()) {
                    yaml_word_problem(word).map_or(Ok(()), |why| {
                        Err(format!(
                            "{key}: the word {} would not reach the container as written: {why}",
                            crate::text::quoted(word)
                        ))
                    })?;
                }
            }
            for arg in args {
                yaml_word_problem(arg).map_or(Ok(()), |why| {
                    Err(format!(
                        "{key}_args: {} would not reach the container as written: {why}",
                        crate::text::quoted(arg)
                    ))
                })?;
            }
            Ok(())
        }
        Deployment::Docker => {
            if !args.is_empty() {
                return Err(format!(
                    "{key}_args: docker deployments do not pass arguments to the container; leave it empty and bake them into the image's CMD"
                ));
            }
            match command {
                Some(c) if !c.chars().all(is_shell_safe) || c.starts_with('-') => Err(format!(
                    "{key}: {} is not a single executable path; docker deployments pass the command as one word (letters, digits and _ . / = : , + @ % - only)",
                    crate::text::quoted(c)
                )),
                _ => Ok(()),
            }
        }
    }
}

/// Checks one environment value for what the deployment and delivery keep intact.
pub fn check_env_value(
    deployment: Deployment,
    delivery: EnvDelivery,
    name: &str,
    value: &str,
) -> Result<(), String> {
    if deployment == Deployment::Docker && value.contains(['\n', '\r', '\0']) {
        return Err(format!(
            "env {}: a line break cannot be stored in a docker env file (one k=v line per variable)",
            crate::text::echo(name)
        ));
    }
    if delivery == EnvDelivery::EnvvarsYaml && has_template_marker(value) {
        return Err(format!(
            "env {}: `[[` or `]]` would be taken as a template by Edge Connect's envVarsYaml processing",
            crate::text::echo(name)
        ));
    }
    Ok(())
}

fn is_shell_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c)
}

fn has_template_marker(s: &str) -> bool {
    s.contains("[[") || s.contains("]]")
}

/// YAML 1.1 booleans, compared lower-cased (go-yaml v2 resolves the lower, Title and UPPER
/// spellings; refusing every mixed case too costs nothing).
const YAML_BOOLS: [&str; 8] = ["y", "yes", "n", "no", "true", "false", "on", "off"];

/// Why YAML would not read `word`, pasted as `- word`, back as the same string; `None` when it
/// would. Conservative: a word is accepted only when it is certainly a plain scalar of itself.
fn yaml_word_problem(word: &str) -> Option<&'static str> {
    if word.is_empty() {
        return Some("an empty item reads as null");
    }
    if word.trim() != word {
        return Some("leading or trailing whitespace is trimmed");
    }
    if word.chars().any(char::is_control) {
        return Some("control characters and line breaks break the YAML list");
    }
    if has_template_marker(word) {
        return Some("`[[` and `]]` are template markers in the manifest");
    }
    let lower = word.to_ascii_lowercase();
    if YAML_BOOLS.contains(&lower.as_str()) {
        return Some("YAML reads it as a boolean");
    }
    if lower == "null" || word == "~" {
        return Some("YAML reads it as null");
    }
    if looks_numeric(&lower) {
        return Some("YAML reads it as a number");
    }
    let first = word.chars().next()?;
    if "[]{}#&*!|>'\"%@`,".contains(first) {
        return Some("YAML gives its first character a meaning");
    }
    if matches!(first, '-' | '?' | ':') && word.len() == 1 {
        return Some("YAML gives it a meaning on its own");
    }
    if word.contains(": ") || word.ends_with(':') {
        return Some("`: ` makes YAML read a mapping");
    }
    if word.contains(" #") {
        return Some("` #` starts a YAML comment");
    }
    None
}

/// Anything YAML 1.1 might resolve as an int, float, infinity or NaN (sexagesimal included).
/// Over-inclusive on purpose: a word made only of digits and number punctuation is refused.
fn looks_numeric(lower: &str) -> bool {
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, ".inf" | ".nan") {
        return true;
    }
    let body = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0b"))
        .or_else(|| body.strip_prefix("0o"))
        .unwrap_or(body);
    !body.is_empty()
        && body.chars().any(|c| c.is_ascii_digit())
        && body
            .chars()
            .all(|c| c.is_ascii_hexdigit() || "._:+-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k8s(command: &str, args: &[&str]) -> Result<(), String> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        check_command(
            Deployment::Kubernetes,
            "edge_connect.command",
            Some(command),
            &args,
        )
    }

    #[test]
    fn ordinary_runner_commands_pass() {
        assert!(k8s("/entrypoint.sh", &["--once", "--labels=a,b", "x=y"]).is_ok());
        assert!(k8s("/bin/sh -c", &["exec /run.sh"]).is_ok());
        assert!(k8s("", &[]).is_ok());
    }

    #[test]
    fn words_yaml_reinterprets_are_refused_with_the_word_and_the_reason() {
        for (word, why) in [
            ("yes", "boolean"),
            ("Off", "boolean"),
            ("~", "null"),
            ("null", "null"),
            ("1e3", "number"),
            ("0x1F", "number"),
            ("12:30", "number"),
            ("key: value", "mapping"),
            ("#comment", "first character"),
            ("*alias", "first character"),
            ("\"quoted\"", "first character"),
            ("a [[ b", "template"),
            ("x #y", "comment"),
        ] {
            let e = k8s("/run", &[word]).unwrap_err();
            assert!(
                e.contains(&format!("{word:?}")) && e.contains(why),
                "{word}: {e}"
            );
        }
        let e = k8s("/run yes", &[]).unwrap_err();
        assert!(
            e.starts_with("edge_connect.command: the word \"yes\""),
            "{e}"
        );
    }

    #[test]
    fn docker_takes_one_shell_safe_word_and_no_arguments() {
        let docker = |c: &str, args: &[String]| {
            check_command(Deployment::Docker, "extra_specs.command", Some(c), args)
        };
        assert!(docker("/entrypoint.sh", &[]).is_ok());
        assert!(docker("/bin/sh -c run", &[])
            .unwrap_err()
            .contains("not a single executable path"));
        assert!(docker("/run;reboot", &[]).is_err());
        assert!(docker("/run", &["x".into()])
            .unwrap_err()
            .starts_with("extra_specs.command_args: docker deployments"));
    }

    #[test]
    fn env_values_that_the_delivery_would_corrupt_are_refused() {
        use Deployment::*;
        use EnvDelivery::*;
        assert!(check_env_value(Docker, EnvVars, "A", "one\ntwo").is_err());
        assert!(check_env_value(Kubernetes, EnvVars, "A", "one\ntwo").is_ok());
        assert!(check_env_value(Kubernetes, EnvvarsYaml, "A", "x [[ .Foo ]]").is_err());
        assert!(check_env_value(Kubernetes, EnvVars, "A", "x [[ .Foo ]]").is_ok());
    }
}
