//! Secrets given by reference. `ITEMGRAPH_CURSOR_SECRET_ARN`,
//! `ITEMGRAPH_CURSOR_SECRET_PREVIOUS_ARN` and `ITEMGRAPH_JWT_SECRET_ARN` name AWS Secrets
//! Manager secrets whose `SecretString` is the value of the variable without `_ARN`. They
//! are read once, at init, one `GetSecretValue` each and all at once, so the values are in
//! no template and no function configuration (where anyone allowed to read the function
//! would see them). The function's role needs `secretsmanager:GetSecretValue` on them.
//!
//! The SDK takes its region and credentials from the function's environment, and its
//! endpoint from `AWS_ENDPOINT_URL_SECRETS_MANAGER` when that is set.

use std::ffi::OsString;

use anyhow::{bail, Context};

/// The variables that may be given by reference, and the flag each sets.
pub const BY_REFERENCE: [(&str, &str); 3] = [
    ("ITEMGRAPH_CURSOR_SECRET", "--cursor-secret"),
    (
        "ITEMGRAPH_CURSOR_SECRET_PREVIOUS",
        "--cursor-secret-previous",
    ),
    ("ITEMGRAPH_JWT_SECRET", "--jwt-secret"),
];

/// The flags (`--cursor-secret=VALUE`, …) for the secrets that `env` names by reference;
/// none, and no call, when it names none. Refused when a variable is given both ways.
pub async fn resolve(env: impl Fn(&str) -> Option<String>) -> anyhow::Result<Vec<OsString>> {
    resolve_with(env, || {
        aws_config::load_defaults(aws_config::BehaviorVersion::latest())
    })
    .await
}

/// [`resolve`], with the SDK's configuration from `config` (loaded only when a secret is
/// named by reference).
pub async fn resolve_with<C>(
    env: impl Fn(&str) -> Option<String>,
    config: impl FnOnce() -> C,
) -> anyhow::Result<Vec<OsString>>
where
    C: std::future::Future<Output = aws_config::SdkConfig>,
{
    let mut wanted = Vec::new();
    for (var, flag) in BY_REFERENCE {
        let by_ref = format!("{var}_ARN");
        let Some(arn) = env(&by_ref).filter(|arn| !arn.trim().is_empty()) else {
            continue;
        };
        if env(var).is_some() {
            bail!("{var} and {by_ref} are both set: give the value or the secret holding it, not both");
        }
        wanted.push((by_ref, flag, arn));
    }
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let client = aws_sdk_secretsmanager::Client::new(&config().await);
    let values = futures::future::try_join_all(wanted.iter().map(|(by_ref, _, arn)| {
        let client = &client;
        async move {
            let out = client
                .get_secret_value()
                .secret_id(arn)
                .send()
                .await
                .map_err(aws_sdk_secretsmanager::Error::from)
                .with_context(|| format!("{by_ref}: reading {arn} from Secrets Manager"))?;
            match out.secret_string {
                Some(value) => Ok(value),
                None => {
                    bail!("{by_ref}: {arn} holds no SecretString (binary secrets are not read)")
                }
            }
        }
    }))
    .await?;
    Ok(wanted
        .into_iter()
        .zip(values)
        // One argument, `--flag=value`: a value starting with `-` is then never read as a
        // flag of its own (whose refusal would quote it into the function's log).
        .map(|((_, flag, _), value)| OsString::from(format!("{flag}={value}")))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    /// A configuration whose Secrets Manager is a closed loopback port.
    async fn unreachable() -> aws_config::SdkConfig {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        at(port).await
    }

    /// A configuration whose Secrets Manager is on this loopback port.
    async fn at(port: u16) -> aws_config::SdkConfig {
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_secretsmanager::config::Credentials::new(
                "test", "test", None, None, "test",
            ))
            .endpoint_url(format!("http://127.0.0.1:{port}"))
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .load()
            .await
    }

    #[tokio::test]
    async fn nothing_by_reference_loads_no_configuration() {
        let flags = resolve_with(env(&[("ITEMGRAPH_CURSOR_SECRET", "x")]), || async {
            panic!("no configuration is loaded when no secret is named by reference")
        })
        .await
        .expect("nothing to read");
        assert!(flags.is_empty());
    }

    #[tokio::test]
    async fn a_value_given_both_ways_is_refused() {
        let vars = [
            ("ITEMGRAPH_JWT_SECRET", "x"),
            (
                "ITEMGRAPH_JWT_SECRET_ARN",
                "arn:aws:secretsmanager:us-east-1:1:secret:jwt",
            ),
        ];
        let error = resolve_with(env(&vars), unreachable).await.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("ITEMGRAPH_JWT_SECRET and ITEMGRAPH_JWT_SECRET_ARN"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_secret_that_cannot_be_read_names_its_variable_and_arn() {
        let arn = "arn:aws:secretsmanager:us-east-1:1:secret:cursor";
        let vars = [("ITEMGRAPH_CURSOR_SECRET_ARN", arn)];
        let error = resolve_with(env(&vars), unreachable).await.unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.contains("ITEMGRAPH_CURSOR_SECRET_ARN") && message.contains(arn),
            "{message}"
        );
    }

    /// A Secrets Manager of the test's own on loopback, answering every `GetSecretValue`
    /// with `value`.
    async fn serving(value: &'static str) -> aws_config::SdkConfig {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        let app = axum::Router::new().fallback(move || async move {
            (
                [("content-type", "application/x-amz-json-1.1")],
                format!(
                    r#"{{"ARN":"arn:aws:secretsmanager:us-east-1:1:secret:cursor","Name":"cursor","SecretString":{value:?}}}"#
                ),
            )
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        at(port).await
    }

    /// A secret whose value starts with `-` is the flag's value, not a flag of its own.
    #[tokio::test]
    async fn a_secret_starting_with_a_dash_is_passed_as_the_flags_value() {
        const VALUE: &str = "-starts-with-a-dash-0123456789abcdef";
        let vars = [(
            "ITEMGRAPH_CURSOR_SECRET_ARN",
            "arn:aws:secretsmanager:us-east-1:1:secret:cursor",
        )];
        let flags = resolve_with(env(&vars), || serving(VALUE))
            .await
            .expect("read");
        assert_eq!(flags, [OsString::from(format!("--cursor-secret={VALUE}"))]);
        let mut args = vec![OsString::from("--store"), OsString::from("dynamodb")];
        args.extend(flags);
        let settings = crate::Settings::parse(args).expect("the value is taken as it is");
        assert_eq!(
            settings.serve.cursor_secret,
            Some(VALUE.parse().expect("a cursor secret"))
        );
    }
}
