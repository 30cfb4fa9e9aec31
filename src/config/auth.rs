//! How callers are authenticated: `serve`'s `--auth`/`--jwt-*` flags ([`AuthArgs`]), and
//! `itemgraph token` ([`TokenArgs`]). What they build is in [`crate::auth`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use jsonwebtoken::Algorithm;
use secrecy::{ExposeSecret, SecretString};

use crate::auth::{
    discover, issue_claims, now_secs, parse_role_map_entry, Audience, Authenticator, ClaimMapping,
    Claims, Jwks, Role, JWKS_ALGORITHMS, MIN_JWT_SECRET_LEN,
};
use crate::keys::Slug;

/// `--auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// Bearer JWTs required on every GraphQL request.
    Jwt,
    /// No authentication: every caller sees and may do everything.
    Off,
}

/// The HS256 secret. Its `Debug` never shows it, so the parsed command line can be logged;
/// it is zeroed when dropped.
#[derive(Clone)]
pub struct JwtSecret(SecretString);

impl std::fmt::Debug for JwtSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtSecret(..)")
    }
}

impl std::str::FromStr for JwtSecret {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() < MIN_JWT_SECRET_LEN {
            return Err(format!(
                "the JWT secret must be at least {MIN_JWT_SECRET_LEN} bytes, e.g. \
                 `openssl rand -hex 32`"
            ));
        }
        Ok(JwtSecret(SecretString::from(s)))
    }
}

impl JwtSecret {
    pub fn as_bytes(&self) -> &[u8] {
        self.0.expose_secret().as_bytes()
    }
}

/// How `serve` authenticates callers.
#[derive(Debug, Clone, Args)]
pub struct AuthArgs {
    /// `jwt`: every GraphQL request needs a bearer token; `off`: none do (local
    /// exploration only). Default: `jwt` when a key is given; otherwise `off` on the
    /// embedded store (with a warning), and a refusal to start on DynamoDB.
    #[arg(long, env = "ITEMGRAPH_AUTH", value_enum)]
    pub auth: Option<AuthMode>,
    /// HS256 secret the tokens are signed with (at least 32 bytes).
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_SECRET",
        value_name = "SECRET",
        hide_env_values = true,
        conflicts_with_all = ["jwt_public_key", "jwt_jwks_url"]
    )]
    pub jwt_secret: Option<JwtSecret>,
    /// PEM file of the identity provider's public key: RSA (RS256) or P-256 (ES256).
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_PUBLIC_KEY",
        value_name = "PATH",
        conflicts_with = "jwt_jwks_url"
    )]
    pub jwt_public_key: Option<PathBuf>,
    /// The identity provider's JWKS URL (its signing keys, chosen by the token's `kid`;
    /// rotated keys are fetched again). Repeatable, or comma-separated, to trust two
    /// providers during a migration. HTTPS, or HTTP on a loopback address.
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_JWKS_URL",
        value_name = "URL",
        value_delimiter = ',',
        value_parser = jwks_url
    )]
    pub jwt_jwks_url: Vec<String>,
    /// The least time between two fetches of the JWKS for tokens naming an unknown key
    /// (and the shortest a fetched set is cached).
    #[arg(
        long,
        env = "ITEMGRAPH_JWKS_MIN_REFRESH",
        value_name = "DURATION",
        default_value = "30s",
        value_parser = super::parse_duration
    )]
    pub jwks_min_refresh: Duration,
    /// The algorithms a JWKS-verified token may use (`none` and HS* never).
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_ALGORITHMS",
        value_name = "ALGS",
        value_delimiter = ',',
        default_value = "RS256,RS384,RS512,PS256,PS384,PS512,ES256,ES384,EdDSA",
        value_parser = jwks_algorithm
    )]
    pub jwt_algorithms: Vec<Algorithm>,
    /// Require `iss` to be this (repeatable, or comma-separated: one of them). Alone,
    /// without a key, it is an OpenID Connect issuer whose JWKS URL is discovered at start
    /// (`<issuer>/.well-known/openid-configuration`).
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_ISSUER",
        value_name = "ISS",
        value_delimiter = ','
    )]
    pub jwt_issuer: Vec<String>,
    /// Also require this `aud` claim.
    #[arg(long, env = "ITEMGRAPH_JWT_AUDIENCE", value_name = "AUD")]
    pub jwt_audience: Option<String>,
    /// The claim naming the caller's organization: a name (`custom:org`,
    /// `https://example.com/org`) or a path of names (`tenant.slug`).
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_ORG_CLAIM",
        value_name = "CLAIM",
        default_value = "org"
    )]
    pub jwt_org_claim: String,
    /// The claim naming the caller's role, or their groups: a string or an array
    /// (`cognito:groups`, `groups`, `roles`, `realm_access.roles`).
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_ROLE_CLAIM",
        value_name = "CLAIM",
        default_value = "role"
    )]
    pub jwt_role_claim: String,
    /// A value of the role claim and the role it grants: `itemgraph-admins=admin`.
    /// Repeatable, or comma-separated. Without it, the values `admin` and `member`.
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_ROLE_MAP",
        value_name = "GROUP=ROLE",
        value_delimiter = ',',
        value_parser = parse_role_map_entry
    )]
    pub jwt_role_map: Vec<(String, Role)>,
    /// Clock skew allowed between the identity provider and this server on `exp`,
    /// `nbf` and `iat`.
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_LEEWAY",
        value_name = "DURATION",
        default_value = "60s",
        value_parser = super::parse_duration
    )]
    pub jwt_leeway: Duration,
    /// Refuse tokens issued longer ago than this, whatever their `exp` (their `iat` is
    /// then required): the bound on a leaked token's life, since tokens are not looked up.
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_MAX_AGE",
        value_name = "DURATION",
        value_parser = super::parse_duration
    )]
    pub jwt_max_age: Option<Duration>,
}

impl Default for AuthArgs {
    /// The command line's defaults.
    fn default() -> Self {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            auth: AuthArgs,
        }
        <Defaults as clap::Parser>::parse_from(["itemgraph"]).auth
    }
}

impl AuthArgs {
    /// Whether a key source is given: a secret, a public key, a JWKS URL, or an issuer to
    /// discover one from.
    fn has_key(&self) -> bool {
        self.jwt_secret.is_some()
            || self.jwt_public_key.is_some()
            || !self.jwt_jwks_url.is_empty()
            || !self.jwt_issuer.is_empty()
    }

    /// The JWKS URLs: `--jwt-jwks-url`, or else each `--jwt-issuer`'s, from its OpenID
    /// discovery document.
    async fn jwks_urls(&self) -> anyhow::Result<Vec<String>> {
        if !self.jwt_jwks_url.is_empty() {
            return Ok(self.jwt_jwks_url.clone());
        }
        let mut urls = Vec::new();
        for issuer in &self.jwt_issuer {
            jwks_url(issuer).map_err(|e| anyhow::anyhow!("--jwt-issuer {e}"))?;
            let url = discover(issuer)
                .await
                .with_context(|| format!("discovering the JWKS of --jwt-issuer {issuer}"))?;
            urls.push(jwks_url(&url).map_err(|e| anyhow::anyhow!("{issuer}'s jwks_uri {e}"))?);
        }
        Ok(urls)
    }

    /// The authenticator to serve with (`None`: auth off). `durable_store` is true for
    /// DynamoDB: a shared table is never served without auth unless `--auth off` is given.
    /// With a JWKS URL, the keys are fetched here: a failure refuses the start.
    pub async fn authenticator(
        &self,
        durable_store: bool,
    ) -> anyhow::Result<Option<Authenticator>> {
        let mode = match (self.auth, self.has_key()) {
            (Some(AuthMode::Off), true) => bail!(
                "--auth off contradicts --jwt-secret/--jwt-public-key/--jwt-jwks-url: drop                  one or the other"
            ),
            (Some(mode), _) => mode,
            (None, true) => AuthMode::Jwt,
            (None, false) if durable_store => bail!(
                "refusing to serve a DynamoDB table without authentication: give                  --jwt-jwks-url, --jwt-public-key or --jwt-secret (--auth jwt), or --auth                  off to serve it to anyone who can reach this port"
            ),
            (None, false) => AuthMode::Off,
        };
        match mode {
            AuthMode::Off => {
                tracing::warn!(
                    "authentication is off: every caller sees and may change every                      organization; for local exploration only (--jwt-jwks-url,                      --jwt-public-key or --jwt-secret require tokens)"
                );
                Ok(None)
            }
            AuthMode::Jwt => {
                let mut authenticator = if let Some(secret) = &self.jwt_secret {
                    Authenticator::hs256(secret.as_bytes())
                } else if let Some(path) = &self.jwt_public_key {
                    let pem = std::fs::read(path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    Authenticator::public_key_pem(&pem)
                        .with_context(|| format!("loading {}", path.display()))?
                } else if !self.jwt_jwks_url.is_empty() || !self.jwt_issuer.is_empty() {
                    let jwks = Jwks::fetch(self.jwks_urls().await?, self.jwks_min_refresh)
                        .await
                        .context("--jwt-jwks-url")?;
                    Authenticator::jwks(jwks, self.jwt_algorithms.clone())?
                } else {
                    bail!(
                        "--auth jwt needs --jwt-jwks-url (or --jwt-issuer, to discover it), \
                         --jwt-public-key or --jwt-secret"
                    )
                };
                authenticator = authenticator
                    .with_issuers(&self.jwt_issuer)
                    .with_mapping(ClaimMapping {
                        org: self.jwt_org_claim.clone(),
                        role: self.jwt_role_claim.clone(),
                        role_map: self.jwt_role_map.clone(),
                    })
                    .with_leeway(self.jwt_leeway);
                if let Some(audience) = &self.jwt_audience {
                    authenticator = authenticator.with_audience(audience);
                }
                if let Some(max_age) = self.jwt_max_age {
                    authenticator = authenticator.with_max_age(max_age);
                }
                Ok(Some(authenticator))
            }
        }
    }
}

/// A JWKS URL: HTTPS, or HTTP to a loopback address (a local provider, a test).
fn jwks_url(s: &str) -> Result<String, String> {
    let uri: axum::http::Uri = s
        .parse()
        .map_err(|e| format!("`{}` is not a URL: {e}", s.escape_debug()))?;
    let host = uri.host().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(s.to_owned()),
        Some("http") if loopback => Ok(s.to_owned()),
        _ => Err(format!(
            "`{}`: a JWKS URL must be https:// (http:// only on a loopback address)",
            s.escape_debug()
        )),
    }
}

/// An algorithm of `--jwt-algorithms`: an asymmetric one.
fn jwks_algorithm(s: &str) -> Result<Algorithm, String> {
    let alg: Algorithm = s
        .trim()
        .parse()
        .map_err(|_| format!("`{}` is not a JWT algorithm", s.escape_debug()))?;
    if JWKS_ALGORITHMS.contains(&alg) {
        Ok(alg)
    } else {
        Err(format!(
            "{alg:?} is never accepted with a JWKS: take among {}",
            JWKS_ALGORITHMS.map(|a| format!("{a:?}")).join(", ")
        ))
    }
}

/// `itemgraph token`: a development token for the playground or a test client.
#[derive(Debug, Clone, Args)]
pub struct TokenArgs {
    /// The HS256 secret the server checks (its `--jwt-secret`).
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_SECRET",
        value_name = "SECRET",
        hide_env_values = true
    )]
    pub jwt_secret: JwtSecret,
    /// The caller's organization (slug).
    #[arg(long, env = "ITEMGRAPH_TOKEN_ORG")]
    pub org: String,
    /// The caller's role in it.
    #[arg(long, env = "ITEMGRAPH_TOKEN_ROLE", value_enum, default_value_t = Role::Member)]
    pub role: Role,
    /// The `sub` claim: who the caller is.
    #[arg(long, env = "ITEMGRAPH_TOKEN_SUB")]
    pub sub: Option<String>,
    /// Seconds until the token expires (at most 366 days).
    #[arg(
        long,
        env = "ITEMGRAPH_TOKEN_EXPIRES_IN",
        default_value_t = 12 * 3600,
        value_parser = clap::value_parser!(u64).range(1..=366 * 24 * 3600)
    )]
    pub expires_in: u64,
    /// The `iss` claim, when the server checks one.
    #[arg(long, env = "ITEMGRAPH_JWT_ISSUER")]
    pub issuer: Option<String>,
    /// The `aud` claim, when the server checks one.
    #[arg(long, env = "ITEMGRAPH_JWT_AUDIENCE")]
    pub audience: Option<String>,
    /// Where the organization goes, as `serve --jwt-org-claim` reads it (the same flag and
    /// variable, so a shell set up for the server mints tokens it maps): a claim name, or a
    /// path of names (`tenant.slug`) written as nested objects; a name with `:` or `/`
    /// (`custom:org`, `https://example.com/org`) is one claim.
    #[arg(long, env = "ITEMGRAPH_JWT_ORG_CLAIM", default_value = "org")]
    pub jwt_org_claim: String,
    /// Where the role goes, as `serve --jwt-role-claim` reads it (`cognito:groups`,
    /// `realm_access.roles`).
    #[arg(long, env = "ITEMGRAPH_JWT_ROLE_CLAIM", default_value = "role")]
    pub jwt_role_claim: String,
    /// The role claim's value instead of the role's name: a group that the server maps
    /// with `--jwt-role-map` (`itemgraph-admins`).
    #[arg(long, env = "ITEMGRAPH_TOKEN_GROUP")]
    pub group: Option<String>,
    /// Write the role claim as an array (of groups or roles), as Cognito, Okta, Entra ID
    /// and Keycloak do.
    #[arg(long, env = "ITEMGRAPH_TOKEN_ROLE_ARRAY")]
    pub role_array: bool,
}

impl TokenArgs {
    /// The signed token: `sub`, `exp`, `iat`, `iss`, `aud`, and the organization and role
    /// where `--jwt-org-claim` and `--jwt-role-claim` put them.
    pub fn token(&self) -> anyhow::Result<String> {
        Slug::parse(&self.org)
            .map_err(|e| anyhow::anyhow!("--org: {e}"))
            .map(drop)?;
        let now = now_secs();
        let claims = Claims {
            sub: self.sub.clone(),
            org: self.org.clone(),
            role: self.role,
            exp: now + self.expires_in,
            iat: Some(now),
            iss: self.issuer.clone(),
            aud: self.audience.as_deref().map(Audience::from),
        };
        let mut claims = match serde_json::to_value(&claims)? {
            serde_json::Value::Object(map) => map,
            _ => unreachable!("claims serialize as an object"),
        };
        claims.remove("org");
        claims.remove("role");
        let role = self
            .group
            .clone()
            .unwrap_or_else(|| self.role.as_str().to_owned());
        let role = if self.role_array {
            serde_json::json!([role])
        } else {
            role.into()
        };
        put_claim(&mut claims, &self.jwt_org_claim, self.org.clone().into());
        put_claim(&mut claims, &self.jwt_role_claim, role);
        issue_claims(self.jwt_secret.as_bytes(), &claims)
    }
}

/// Puts `value` at the claim `name`: one claim when the name holds `:` or `/` or no `.`;
/// otherwise nested objects along the path its `.`s separate (how the server reads it).
fn put_claim(
    claims: &mut serde_json::Map<String, serde_json::Value>,
    name: &str,
    value: serde_json::Value,
) {
    if name.contains([':', '/']) || !name.contains('.') {
        claims.insert(name.to_owned(), value);
        return;
    }
    let mut parts: Vec<&str> = name.split('.').collect();
    let last = parts.pop().unwrap_or(name);
    let mut at = claims;
    for part in parts {
        let entry = at
            .entry(part.to_owned())
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        if !entry.is_object() {
            *entry = serde_json::Value::Object(Default::default());
        }
        at = entry.as_object_mut().expect("an object");
    }
    at.insert(last.to_owned(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[tokio::test]
    async fn dynamodb_needs_auth_or_an_explicit_off() {
        let none = AuthArgs::default();
        assert!(none.authenticator(true).await.is_err());
        assert!(none.authenticator(false).await.unwrap().is_none());
        let off = AuthArgs {
            auth: Some(AuthMode::Off),
            ..Default::default()
        };
        assert!(off.authenticator(true).await.unwrap().is_none());
        let jwt_without_key = AuthArgs {
            auth: Some(AuthMode::Jwt),
            ..Default::default()
        };
        assert!(jwt_without_key.authenticator(false).await.is_err());
        let secret = AuthArgs {
            jwt_secret: Some(SECRET.parse().unwrap()),
            ..Default::default()
        };
        assert!(secret.authenticator(true).await.unwrap().is_some());
        let contradictory = AuthArgs {
            auth: Some(AuthMode::Off),
            ..secret
        };
        assert!(contradictory.authenticator(false).await.is_err());
        assert!("short".parse::<JwtSecret>().is_err());
    }

    #[test]
    fn jwks_urls_are_https_or_loopback_and_algorithms_asymmetric() {
        assert!(jwks_url("https://id.example.com/.well-known/jwks.json").is_ok());
        assert!(jwks_url("http://127.0.0.1:8080/jwks").is_ok());
        assert!(jwks_url("http://[::1]:8080/jwks").is_ok());
        assert!(jwks_url("http://localhost/jwks").is_ok());
        assert!(jwks_url("http://id.example.com/jwks").is_err());
        assert!(jwks_url("ftp://id.example.com/jwks").is_err());
        assert_eq!(jwks_algorithm("ES256"), Ok(Algorithm::ES256));
        assert!(jwks_algorithm("HS256").is_err());
        assert!(jwks_algorithm("none").is_err());
        let defaults = AuthArgs::default();
        assert_eq!(defaults.jwt_algorithms, JWKS_ALGORITHMS.to_vec());
        assert_eq!(defaults.jwt_leeway, Duration::from_secs(60));
        assert_eq!(defaults.jwt_org_claim, "org");
    }

    /// `itemgraph token` mints, in a provider's shape, what `serve` maps back.
    #[test]
    fn tokens_in_the_providers_shapes_map_back() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            token: TokenArgs,
        }
        // The token's flags, and the role map the server is given.
        type Case<'a> = (&'a [&'a str], &'a [(&'a str, Role)]);
        let cases: [Case; 3] = [
            // Cognito: a custom attribute and a groups array.
            (
                &[
                    "--jwt-org-claim",
                    "custom:org",
                    "--jwt-role-claim",
                    "cognito:groups",
                    "--group",
                    "itemgraph-admins",
                    "--role-array",
                ],
                &[("itemgraph-admins", Role::Admin)],
            ),
            // Auth0: namespaced claims.
            (
                &[
                    "--jwt-org-claim",
                    "https://example.com/org",
                    "--jwt-role-claim",
                    "https://example.com/role",
                    "--role",
                    "admin",
                ],
                &[],
            ),
            // Keycloak: roles nested in realm_access.
            (
                &[
                    "--jwt-org-claim",
                    "organization",
                    "--jwt-role-claim",
                    "realm_access.roles",
                    "--role",
                    "admin",
                    "--role-array",
                ],
                &[],
            ),
        ];
        for (flags, role_map) in cases {
            let mut argv = vec!["itemgraph", "--jwt-secret", SECRET, "--org", "acme"];
            argv.extend_from_slice(flags);
            let token = <Cli as clap::Parser>::parse_from(argv).token;
            let auth = Authenticator::hs256(SECRET.as_bytes()).with_mapping(ClaimMapping {
                org: token.jwt_org_claim.clone(),
                role: token.jwt_role_claim.clone(),
                role_map: role_map
                    .iter()
                    .map(|(g, r)| ((*g).to_owned(), *r))
                    .collect(),
            });
            let access = auth
                .authenticate(Some(
                    format!("Bearer {}", token.token().unwrap()).as_bytes(),
                ))
                .unwrap_or_else(|e| panic!("{flags:?}: {e}"));
            assert_eq!(access.org().map(|o| o.as_str()), Some("acme"), "{flags:?}");
            assert!(access.require_admin("test").is_ok(), "{flags:?}");
        }
    }
}
