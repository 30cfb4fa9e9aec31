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

/// The flags (`--cursor-secret VALUE`, …) for the secrets that `env` names by reference;
/// none, and no call, when it names none. Refused when a variable is given both ways.
pub async fn resolve(env: impl Fn(&str) -> Option<String>) -> anyhow::Result<Vec<OsString>> {
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
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
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
        .flat_map(|((_, flag, _), value)| [OsString::from(flag), OsString::from(value)])
        .collect())
}
