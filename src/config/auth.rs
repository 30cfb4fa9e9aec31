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
    Claims, Jwks, KeySource, Role, JWKS_ALGORITHMS, MIN_JWT_SECRET_LEN,
};
use crate::chart::kinds::Tenant;

use super::SecretValue;

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
        allow_hyphen_values = true,
        value_parser = SecretValue(<JwtSecret as std::str::FromStr>::from_str),
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
    /// rotated keys are fetched again), as `ISSUER=URL` or `URL`. Its keys verify only
    /// tokens of that issuer: `ISSUER=`, or else the one `--jwt-issuer`. Repeatable, or
    /// comma-separated, to trust two providers during a migration (each then `ISSUER=URL`).
    /// HTTPS, or HTTP on a loopback address.
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_JWKS_URL",
        value_name = "[ISSUER=]URL",
        value_delimiter = ',',
        value_parser = jwks_source
    )]
    pub jwt_jwks_url: Vec<KeySource>,
    /// The least time between two fetches of the JWKS for tokens naming an unknown key
    /// (and the shortest a fetched set is cached).
    /// From 1s to 1h.
    #[arg(
        long,
        env = "ITEMGRAPH_JWKS_MIN_REFRESH",
        value_name = "DURATION",
        default_value = "30s",
        value_parser = super::duration_within(Duration::from_secs(1), Duration::from_secs(3600))
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
    /// Also require this `aud` claim: the client (application) the tokens are issued to.
    /// Required with a JWKS, unless `--jwt-no-audience`.
    #[arg(long, env = "ITEMGRAPH_JWT_AUDIENCE", value_name = "AUD")]
    pub jwt_audience: Option<String>,
    /// With a JWKS, accept tokens whatever their `aud`: of every client of the provider
    /// (each could replay its tokens here). Said explicitly, since it is rarely meant.
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_NO_AUDIENCE",
        conflicts_with = "jwt_audience",
        value_parser = clap::builder::BoolishValueParser::new(),
        default_value = "false",
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub jwt_no_audience: bool,
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
    /// Repeatable, or comma-separated. Without it, the values `admin` and `member`: only
    /// for the claim `role` (any other claim needs a map, so that a value named `admin`
    /// meant for another application grants nothing here).
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
    /// From 0s to 5m.
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_LEEWAY",
        value_name = "DURATION",
        default_value = "60s",
        value_parser = super::duration_within(Duration::ZERO, Duration::from_secs(300))
    )]
    pub jwt_leeway: Duration,
    /// Refuse tokens issued longer ago than this, whatever their `exp` (their `iat` is
    /// then required): the bound on a leaked token's life, since tokens are not looked up.
    /// From 1m to 30 days (43200m).
    #[arg(
        long,
        env = "ITEMGRAPH_JWT_MAX_AGE",
        value_name = "DURATION",
        value_parser = super::duration_within(Duration::from_secs(60), Duration::from_secs(30 * 24 * 3600))
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

    /// Whether the keys come from a JWKS (`--jwt-jwks-url`, or discovered from
    /// `--jwt-issuer`).
    fn uses_jwks(&self) -> bool {
        self.jwt_secret.is_none() && self.jwt_public_key.is_none() && self.has_key()
    }

    /// Whether callers are authenticated: `--auth`, else on with a key, else off on the
    /// embedded store; refused for DynamoDB with neither (`durable_store`).
    pub fn mode(&self, durable_store: bool) -> anyhow::Result<AuthMode> {
        Ok(match (self.auth, self.has_key()) {
            (Some(AuthMode::Off), true) => bail!(
                "--auth off contradicts --jwt-secret/--jwt-public-key/--jwt-jwks-url/--jwt-issuer: \
                 drop one or the other"
            ),
            (Some(mode), _) => mode,
            (None, true) => AuthMode::Jwt,
            (None, false) if durable_store => bail!(
                "refusing to serve a DynamoDB table without authentication: give \
                 --jwt-jwks-url, --jwt-public-key or --jwt-secret (--auth jwt), or --auth \
                 off to serve it to anyone who can reach this port"
            ),
            (None, false) => AuthMode::Off,
        })
    }

    /// The JWKS sources, each bound to its issuer: `--jwt-jwks-url` (its `ISSUER=`, or the
    /// one `--jwt-issuer`), or else each `--jwt-issuer`'s, from its OpenID discovery
    /// document.
    async fn key_sources(&self) -> anyhow::Result<Vec<KeySource>> {
        if !self.jwt_jwks_url.is_empty() {
            let only = match self.jwt_issuer.as_slice() {
                [only] => Some(only.clone()),
                _ => None,
            };
            return Ok(self
                .jwt_jwks_url
                .iter()
                .map(|source| KeySource {
                    url: source.url.clone(),
                    issuer: source.issuer.clone().or_else(|| only.clone()),
                })
                .collect());
        }
        let mut sources = Vec::new();
        for issuer in &self.jwt_issuer {
            jwks_url(issuer).map_err(|e| anyhow::anyhow!("--jwt-issuer {e}"))?;
            let url = discover(issuer)
                .await
                .with_context(|| format!("discovering the JWKS of --jwt-issuer {issuer}"))?;
            let url = jwks_url(&url).map_err(|e| anyhow::anyhow!("{issuer}'s jwks_uri {e}"))?;
            sources.push(KeySource {
                url,
                issuer: Some(issuer.clone()),
            });
        }
        Ok(sources)
    }

    /// Every issuer a token may name: `--jwt-issuer`, and each `ISSUER=` of
    /// `--jwt-jwks-url`.
    fn issuers(&self) -> Vec<String> {
        let mut issuers = self.jwt_issuer.clone();
        for issuer in self.jwt_jwks_url.iter().filter_map(|s| s.issuer.as_ref()) {
            if !issuers.contains(issuer) {
                issuers.push(issuer.clone());
            }
        }
        issuers
    }

    /// Refuses the identity configurations that accept more than they seem to: with a
    /// JWKS, no issuer (a shared key set, Entra's `common` or Google's, signs every
    /// tenant's tokens), a key set bound to no issuer or to one not required, and no
    /// audience unless `--jwt-no-audience` (every client of the provider could replay its
    /// tokens here); a role claim other than `role` without `--jwt-role-map` (a value named
    /// `admin`, meant for another application, would grant admin here).
    pub fn check(&self) -> anyhow::Result<()> {
        if self.uses_jwks() {
            let unbound = self.jwt_jwks_url.iter().filter(|s| s.issuer.is_none());
            match (self.jwt_issuer.len(), unbound.count()) {
                (0, 0) if !self.jwt_jwks_url.is_empty() => {}
                (0, _) => bail!(
                    "with a JWKS, --jwt-issuer is required (or --jwt-jwks-url ISSUER=URL): a \
                     key set shared by many tenants (Entra ID's common, Google's) would \
                     otherwise accept every tenant's tokens"
                ),
                (1, _) | (_, 0) => {}
                (_, _) => bail!(
                    "with several --jwt-issuer values, name each key set's issuer: \
                     --jwt-jwks-url ISSUER=URL, so that one provider's keys never verify \
                     another's tokens"
                ),
            }
            if !self.jwt_issuer.is_empty() {
                for source in &self.jwt_jwks_url {
                    if let Some(issuer) = source.issuer.as_ref() {
                        anyhow::ensure!(
                            self.jwt_issuer.contains(issuer),
                            "--jwt-jwks-url names the issuer {issuer}, which --jwt-issuer does not"
                        );
                    }
                }
            }
            anyhow::ensure!(
                self.jwt_audience.is_some() || self.jwt_no_audience,
                "with a JWKS, --jwt-audience is required (the client id the tokens are issued \
                 to): without it every client of the provider could replay its tokens here; \
                 --jwt-no-audience accepts them all explicitly"
            );
        }
        anyhow::ensure!(
            self.jwt_role_claim == "role" || !self.jwt_role_map.is_empty(),
            "--jwt-role-claim {} needs --jwt-role-map (GROUP=ROLE, e.g. \
             itemgraph-admins=admin): without it a value named `admin` in that claim, meant \
             for another application, would make the caller an itemgraph admin",
            self.jwt_role_claim
        );
        Ok(())
    }

    /// The authenticator to serve with (`None`: auth off). `durable_store` is true for
    /// DynamoDB: a shared table is never served without auth unless `--auth off` is given.
    /// With a JWKS URL, the keys are fetched here: a failure refuses the start.
    pub async fn authenticator(
        &self,
        durable_store: bool,
    ) -> anyhow::Result<Option<Authenticator>> {
        match self.mode(durable_store)? {
            AuthMode::Off => {
                tracing::warn!("{AUTH_OFF_WARNING}");
                Ok(None)
            }
            AuthMode::Jwt => {
                self.check()?;
                let mut authenticator = if let Some(secret) = &self.jwt_secret {
                    Authenticator::hs256(secret.as_bytes())
                } else if let Some(path) = &self.jwt_public_key {
                    let pem = std::fs::read(path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    Authenticator::public_key_pem(&pem)
                        .with_context(|| format!("loading {}", path.display()))?
                } else if self.uses_jwks() {
                    let jwks = Jwks::fetch(self.key_sources().await?, self.jwks_min_refresh)
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
                    .with_issuers(&self.issuers())
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

/// What `serve` logs when authentication is off.
pub const AUTH_OFF_WARNING: &str = "authentication is off: every caller sees and may change \
    every organization; for local exploration only (--jwt-jwks-url, --jwt-public-key or \
    --jwt-secret require tokens)";

/// `--jwt-jwks-url`: `ISSUER=URL` (the issuer itself a URL), or a bare `URL`.
fn jwks_source(s: &str) -> Result<KeySource, String> {
    let s = s.trim();
    let (issuer, url) = match s.split_once('=') {
        Some((issuer, url)) if url.starts_with("https://") || url.starts_with("http://") => {
            if issuer.trim().is_empty() {
                return Err(format!(
                    "`{}`: the issuer before `=` is empty",
                    s.escape_debug()
                ));
            }
            (Some(issuer.trim().to_owned()), url)
        }
        _ => (None, s),
    };
    Ok(KeySource {
        url: jwks_url(url)?,
        issuer,
    })
}

/// A JWKS URL: HTTPS, or HTTP to a loopback address (a local provider, a test).
fn jwks_url(s: &str) -> Result<String, String> {
    let uri: axum::http::Uri = s
        .parse()
        .map_err(|e| format!("`{}` is not a URL: {e}", s.escape_debug()))?;
    if crate::auth::fetchable(
        uri.scheme_str().unwrap_or_default(),
        uri.host().unwrap_or_default(),
    ) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "`{}`: a JWKS URL must be https:// (http:// only on a loopback address)",
            s.escape_debug()
        ))
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
        hide_env_values = true,
        allow_hyphen_values = true,
        value_parser = SecretValue(<JwtSecret as std::str::FromStr>::from_str)
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
        Tenant::parse(&self.org)
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

    fn auth(args: &[&str]) -> Result<AuthArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            auth: AuthArgs,
        }
        let mut argv = vec!["itemgraph"];
        argv.extend_from_slice(args);
        <Cli as clap::Parser>::try_parse_from(argv).map(|cli| cli.auth)
    }

    /// With a JWKS, no issuer (a shared key set accepts every tenant's tokens), no
    /// audience (every client of the provider replays its tokens), or a role claim of the
    /// provider's without a map (a role named `admin` meant for another application) is
    /// refused at start, saying why.
    #[test]
    fn identity_configurations_that_accept_too_much_are_refused() {
        const JWKS: &str = "https://login.example/common/keys";
        const ISS: &str = "https://login.example/tenant-1/v2.0";
        let refused = |args: &[&str], says: &str| {
            let error = auth(args).unwrap().check().unwrap_err().to_string();
            assert!(error.contains(says), "{args:?}: {error}");
        };
        refused(
            &["--jwt-jwks-url", JWKS, "--jwt-audience", "app"],
            "--jwt-issuer is required",
        );
        refused(
            &["--jwt-jwks-url", JWKS, "--jwt-issuer", ISS],
            "--jwt-audience is required",
        );
        refused(
            &[
                "--jwt-jwks-url",
                JWKS,
                "--jwt-issuer",
                &format!("{ISS},https://other.example"),
                "--jwt-audience",
                "app",
            ],
            "ISSUER=URL",
        );
        refused(
            &[
                "--jwt-jwks-url",
                &format!("https://third.example={JWKS}"),
                "--jwt-issuer",
                ISS,
                "--jwt-audience",
                "app",
            ],
            "which --jwt-issuer does not",
        );
        refused(
            &[
                "--jwt-jwks-url",
                JWKS,
                "--jwt-issuer",
                ISS,
                "--jwt-audience",
                "app",
                "--jwt-role-claim",
                "realm_access.roles",
            ],
            "needs --jwt-role-map",
        );
        // A secret's tokens too: any claim but `role` needs its map.
        refused(
            &["--jwt-secret", SECRET, "--jwt-role-claim", "groups"],
            "needs --jwt-role-map",
        );
        for taken in [
            &[
                "--jwt-jwks-url",
                JWKS,
                "--jwt-issuer",
                ISS,
                "--jwt-audience",
                "app",
            ][..],
            &[
                "--jwt-jwks-url",
                JWKS,
                "--jwt-issuer",
                ISS,
                "--jwt-no-audience",
            ],
            &[
                "--jwt-jwks-url",
                &format!("{ISS}={JWKS}"),
                "--jwt-audience",
                "app",
            ],
            &[
                "--jwt-jwks-url",
                &format!("{ISS}={JWKS},https://other.example=https://other.example/keys"),
                "--jwt-audience",
                "app",
                "--jwt-role-claim",
                "groups",
                "--jwt-role-map",
                "itemgraph-admins=admin",
            ],
            &["--jwt-secret", SECRET],
        ] {
            auth(taken)
                .unwrap()
                .check()
                .unwrap_or_else(|e| panic!("{taken:?}: {e}"));
        }
        assert!(auth(&["--jwt-audience", "app", "--jwt-no-audience"]).is_err());
        let bound = auth(&["--jwt-jwks-url", &format!("{ISS}={JWKS}")]).unwrap();
        assert_eq!(
            bound.jwt_jwks_url,
            [KeySource {
                url: JWKS.into(),
                issuer: Some(ISS.into())
            }]
        );
        assert_eq!(bound.issuers(), [ISS]);
    }

    /// A refused secret is named by its flag, never quoted; one starting with `-` is a
    /// value, not a flag.
    #[test]
    fn a_refused_secret_is_never_printed() {
        let short = "hunter2-but-short";
        let error = auth(&["--jwt-secret", short])
            .expect_err("too short")
            .to_string();
        assert!(!error.contains(short), "{error}");
        assert!(
            error.contains("--jwt-secret") && error.contains("32 bytes"),
            "{error}"
        );
        let dashed = "-0123456789abcdef0123456789abcdef";
        let taken = auth(&["--jwt-secret", dashed]).expect("a value starting with a dash");
        assert_eq!(taken.jwt_secret.unwrap().as_bytes(), dashed.as_bytes());
    }

    /// Every duration flag of the identity settings has a floor and a ceiling.
    #[test]
    fn identity_durations_are_bounded() {
        for (flag, refused) in [
            ("--jwks-min-refresh", "0"),
            ("--jwks-min-refresh", "500ms"),
            ("--jwks-min-refresh", "2h"),
            ("--jwt-leeway", "30m"),
            ("--jwt-leeway", "18446744073709551615"),
            ("--jwt-max-age", "0"),
            ("--jwt-max-age", "99999999999999m"),
        ] {
            let error = auth(&[flag, refused])
                .err()
                .unwrap_or_else(|| panic!("{flag} {refused}"));
            assert!(
                error.to_string().contains("outside"),
                "{flag} {refused}: {error}"
            );
        }
        let taken = auth(&[
            "--jwks-min-refresh",
            "1s",
            "--jwt-leeway",
            "5m",
            "--jwt-max-age",
            "1m",
        ])
        .unwrap();
        assert_eq!(taken.jwks_min_refresh, Duration::from_secs(1));
        assert_eq!(taken.jwt_leeway, Duration::from_secs(300));
    }

    #[test]
    fn the_auth_off_warning_reads_as_one_sentence() {
        assert!(!AUTH_OFF_WARNING.contains("  "), "{AUTH_OFF_WARNING}");
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
