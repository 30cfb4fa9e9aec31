//! Who is calling, and what they may see and do.
//!
//! A caller proves who they are with a bearer JWT (`Authorization: Bearer <token>`)
//! signed by the deployment's identity provider: HS256 with a shared secret
//! (`--jwt-secret`), or RS256/ES256 checked against a public key (`--jwt-public-key`).
//! The token carries the caller's organization (`org`) and role (`role`: `admin` or
//! `member`); `exp` is required. The result is an [`Access`], which every resolver and
//! mutation consults (see `graphql::RequestContext`): another organization's data answers
//! exactly as if it did not exist, and only an admin manages users and changes orders.
//!
//! `--auth off` makes every caller [`Access::Unrestricted`]: for local exploration of the
//! embedded demo store only. Serving a DynamoDB table without auth needs `--auth off`
//! spelled out (see [`AuthArgs::authenticator`]).

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::keys::Slug;
use crate::model::Entity;

/// The caller may not do what it asked (the message says why). Clients see `FORBIDDEN`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Forbidden(pub String);

/// What a token's `role` claim grants within its organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything a member may, and managing users and changing orders' status.
    Admin,
    /// Reads everything of the organization; raises and changes tickets; places orders.
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }
}

/// The claims of an itemgraph token. Others (`iat`, `nbf`, `jti`, …) may be present and
/// are ignored, except `iss`/`aud` when the server is told to check them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who the caller is (informational: logged, never trusted for access).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// The caller's organization: its slug.
    pub org: String,
    pub role: Role,
    /// Expiry, seconds since the Unix epoch. Required.
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// One audience or several (RFC 7519 allows both; identity providers often send a
    /// list). With `--jwt-audience`, one of them must be it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<Audience>,
}

/// The `aud` claim: a string, or an array of strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    One(String),
    Many(Vec<String>),
}

impl From<&str> for Audience {
    fn from(aud: &str) -> Self {
        Audience::One(aud.to_owned())
    }
}

/// What one request may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// `--auth off`: every organization, every action.
    Unrestricted,
    /// An authenticated caller: one organization, with a role.
    Tenant {
        org: Slug,
        role: Role,
        subject: Option<String>,
    },
}

impl Access {
    /// Whether the caller may see anything of organization `org`.
    pub fn sees(&self, org: &Slug) -> bool {
        match self {
            Access::Unrestricted => true,
            Access::Tenant { org: own, .. } => own == org,
        }
    }

    /// Whether the caller may see `entity`. An order line names no organization (it is
    /// reached only through its order, which is checked), so a tenant never gets one alone.
    pub fn sees_entity(&self, entity: &Entity) -> bool {
        match entity {
            Entity::Organization(o) => self.sees(&o.slug),
            Entity::User(u) => self.sees(&u.org),
            Entity::UserEmail(e) => self.sees(&e.org),
            Entity::Ticket(t) => self.sees(&t.org),
            Entity::Order(o) => self.sees(&o.org),
            Entity::OrderLine(_) => matches!(self, Access::Unrestricted),
        }
    }

    /// `FORBIDDEN` unless the caller is an admin (or auth is off); `action` completes
    /// "only an admin of the organization may …". Checked before anything is read, so it
    /// says nothing of what exists.
    pub fn require_admin(&self, action: &'static str) -> Result<(), Forbidden> {
        match self {
            Access::Unrestricted
            | Access::Tenant {
                role: Role::Admin, ..
            } => Ok(()),
            Access::Tenant { .. } => Err(Forbidden(format!(
                "only an admin of the organization may {action}"
            ))),
        }
    }

    /// The caller's organization, when there is one.
    pub fn org(&self) -> Option<&Slug> {
        match self {
            Access::Unrestricted => None,
            Access::Tenant { org, .. } => Some(org),
        }
    }
}

/// Why a request was not authenticated: answered `401` with code `UNAUTHENTICATED`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("authentication required: send `Authorization: Bearer <token>`")]
    Missing,
    #[error("the Authorization header must be `Bearer <token>`")]
    NotBearer,
    #[error("the token has expired")]
    Expired,
    #[error("invalid token: {0}")]
    Invalid(String),
}

impl AuthError {
    pub const CODE: &'static str = "UNAUTHENTICATED";
}

/// Longest token accepted: real ones are well under 2 KB; this bounds the work a forged
/// one causes before its signature is checked.
const MAX_TOKEN_LEN: usize = 8 * 1024;

/// Shortest HS256 secret accepted: 256 bits as hex would be 64; 32 characters is the
/// floor below which a secret is guessable.
pub const MIN_JWT_SECRET_LEN: usize = 32;

/// Checks bearer tokens against one key.
#[derive(Clone)]
pub struct Authenticator {
    key: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("algorithms", &self.validation.algorithms)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// HS256 tokens signed with `secret`.
    pub fn hs256(secret: &[u8]) -> Authenticator {
        Self::with(DecodingKey::from_secret(secret), Algorithm::HS256)
    }

    /// RS256 tokens when `pem` is an RSA public key, ES256 when it is a P-256 one.
    pub fn public_key_pem(pem: &[u8]) -> anyhow::Result<Authenticator> {
        if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
            return Ok(Self::with(key, Algorithm::RS256));
        }
        if let Ok(key) = DecodingKey::from_ec_pem(pem) {
            return Ok(Self::with(key, Algorithm::ES256));
        }
        bail!("not a PEM RSA or EC (P-256) public key")
    }

    fn with(key: DecodingKey, algorithm: Algorithm) -> Authenticator {
        let mut validation = Validation::new(algorithm);
        validation.set_required_spec_claims(&["exp"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        // One expiry rule on every transport (POST, WebSocket, event stream, a running
        // subscription): `authenticate_until` refuses a token once `exp` is reached, with
        // no leeway. jsonwebtoken's leeway (60 s) is kept for `nbf` only, so an identity
        // provider whose clock runs a little ahead is not refused.
        // A token with an `aud` is refused unless the server is told which audience to
        // expect (jsonwebtoken's rule); without one, `aud` is not looked at.
        validation.validate_aud = false;
        Authenticator { key, validation }
    }

    /// Also require `iss` to be `issuer`.
    pub fn with_issuer(mut self, issuer: &str) -> Authenticator {
        self.validation.set_issuer(&[issuer]);
        self.validation.required_spec_claims.insert("iss".into());
        self
    }

    /// Also require `aud` to be `audience`.
    pub fn with_audience(mut self, audience: &str) -> Authenticator {
        self.validation.set_audience(&[audience]);
        self.validation.validate_aud = true;
        self.validation.required_spec_claims.insert("aud".into());
        self
    }

    /// The access an `Authorization` header value grants.
    pub fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Access, AuthError> {
        self.authenticate_until(authorization)
            .map(|(access, _)| access)
    }

    /// [`authenticate`](Self::authenticate), with when the token expires (its `exp`,
    /// seconds since the Unix epoch): a subscription ends then.
    pub fn authenticate_until(
        &self,
        authorization: Option<&[u8]>,
    ) -> Result<(Access, u64), AuthError> {
        let header = authorization.ok_or(AuthError::Missing)?;
        let header = std::str::from_utf8(header).map_err(|_| AuthError::NotBearer)?;
        let (scheme, token) = header.trim().split_once(' ').ok_or(AuthError::NotBearer)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::NotBearer);
        }
        let token = token.trim();
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(AuthError::Invalid("malformed".into()));
        }
        let claims = self.claims(token)?;
        let exp = claims.exp;
        // RFC 7519: valid only *before* `exp` (jsonwebtoken accepts `exp == now`); the
        // same rule as a running subscription's end (`TokenExpiry::expired`).
        if exp <= now_secs() {
            return Err(AuthError::Expired);
        }
        Ok((access_of(claims)?, exp))
    }

    fn claims(&self, token: &str) -> Result<Claims, AuthError> {
        use jsonwebtoken::errors::ErrorKind;
        jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| match e.kind() {
                ErrorKind::ExpiredSignature => AuthError::Expired,
                ErrorKind::InvalidSignature => AuthError::Invalid("bad signature".into()),
                ErrorKind::InvalidAlgorithm => AuthError::Invalid("wrong algorithm".into()),
                ErrorKind::MissingRequiredClaim(c) => {
                    AuthError::Invalid(format!("the `{c}` claim is required"))
                }
                ErrorKind::InvalidIssuer => AuthError::Invalid("wrong issuer".into()),
                ErrorKind::InvalidAudience => AuthError::Invalid("wrong audience".into()),
                ErrorKind::ImmatureSignature => AuthError::Invalid("not valid yet".into()),
                ErrorKind::Json(_) => AuthError::Invalid(
                    "claims must include `org` (an organization slug) and `role` \
                     (`admin` or `member`)"
                        .into(),
                ),
                _ => AuthError::Invalid("malformed".into()),
            })
    }
}

fn access_of(claims: Claims) -> Result<Access, AuthError> {
    let org = Slug::parse(&claims.org)
        .map_err(|_| AuthError::Invalid("the `org` claim is not an organization slug".into()))?;
    Ok(Access::Tenant {
        org,
        role: claims.role,
        subject: claims.sub,
    })
}

/// Signs a development token (`itemgraph token`) with an HS256 secret.
pub fn issue_token(secret: &[u8], claims: &Claims) -> anyhow::Result<String> {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret),
    )
    .context("signing the token")
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

// --- configuration -----------------------------------------------------------------------

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
#[derive(Debug, Clone, Default, Args)]
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
        conflicts_with = "jwt_public_key"
    )]
    pub jwt_secret: Option<JwtSecret>,
    /// PEM file of the identity provider's public key: RSA (RS256) or P-256 (ES256).
    #[arg(long, env = "ITEMGRAPH_JWT_PUBLIC_KEY", value_name = "PATH")]
    pub jwt_public_key: Option<PathBuf>,
    /// Also require this `iss` claim.
    #[arg(long, env = "ITEMGRAPH_JWT_ISSUER", value_name = "ISS")]
    pub jwt_issuer: Option<String>,
    /// Also require this `aud` claim.
    #[arg(long, env = "ITEMGRAPH_JWT_AUDIENCE", value_name = "AUD")]
    pub jwt_audience: Option<String>,
}

impl AuthArgs {
    /// The authenticator to serve with (`None`: auth off). `durable_store` is true for
    /// DynamoDB: a shared table is never served without auth unless `--auth off` is given.
    pub fn authenticator(&self, durable_store: bool) -> anyhow::Result<Option<Authenticator>> {
        let has_key = self.jwt_secret.is_some() || self.jwt_public_key.is_some();
        let mode = match (self.auth, has_key) {
            (Some(AuthMode::Off), true) => {
                bail!("--auth off contradicts --jwt-secret/--jwt-public-key: drop one or the other")
            }
            (Some(mode), _) => mode,
            (None, true) => AuthMode::Jwt,
            (None, false) if durable_store => bail!(
                "refusing to serve a DynamoDB table without authentication: give \
                 --jwt-secret or --jwt-public-key (--auth jwt), or --auth off to serve it \
                 to anyone who can reach this port"
            ),
            (None, false) => AuthMode::Off,
        };
        match mode {
            AuthMode::Off => {
                tracing::warn!(
                    "authentication is off: every caller sees and may change every \
                     organization; for local exploration only (--jwt-secret or \
                     --jwt-public-key require tokens)"
                );
                Ok(None)
            }
            AuthMode::Jwt => {
                let mut authenticator = match (&self.jwt_secret, &self.jwt_public_key) {
                    (Some(secret), _) => Authenticator::hs256(secret.as_bytes()),
                    (None, Some(path)) => {
                        let pem = std::fs::read(path)
                            .with_context(|| format!("reading {}", path.display()))?;
                        Authenticator::public_key_pem(&pem)
                            .with_context(|| format!("loading {}", path.display()))?
                    }
                    (None, None) => {
                        bail!("--auth jwt needs --jwt-secret or --jwt-public-key")
                    }
                };
                if let Some(issuer) = &self.jwt_issuer {
                    authenticator = authenticator.with_issuer(issuer);
                }
                if let Some(audience) = &self.jwt_audience {
                    authenticator = authenticator.with_audience(audience);
                }
                Ok(Some(authenticator))
            }
        }
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
}

impl TokenArgs {
    /// The signed token.
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
        issue_token(self.jwt_secret.as_bytes(), &claims)
    }
}

/// The `exp` of a token valid for `ttl` from now, for tools and tests that mint their own.
pub fn expiring_in(ttl: Duration) -> u64 {
    now_secs() + ttl.as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn claims(org: &str, role: Role, exp: u64) -> Claims {
        Claims {
            sub: Some("wile".into()),
            org: org.into(),
            role,
            exp,
            iat: None,
            iss: None,
            aud: None,
        }
    }

    fn bearer(token: &str) -> Vec<u8> {
        format!("Bearer {token}").into_bytes()
    }

    #[test]
    fn a_signed_token_grants_its_org_and_role() {
        let auth = Authenticator::hs256(SECRET);
        let token = issue_token(
            SECRET,
            &claims("acme", Role::Admin, expiring_in(Duration::from_secs(60))),
        )
        .unwrap();
        let access = auth.authenticate(Some(&bearer(&token))).unwrap();
        assert_eq!(
            access,
            Access::Tenant {
                org: Slug::parse("acme").unwrap(),
                role: Role::Admin,
                subject: Some("wile".into()),
            }
        );
        assert!(access.sees(&Slug::parse("acme").unwrap()));
        assert!(!access.sees(&Slug::parse("globex").unwrap()));
        assert!(access.require_admin("x").is_ok());
    }

    #[test]
    fn bad_tokens_are_refused_with_a_reason() {
        let auth = Authenticator::hs256(SECRET);
        let live = expiring_in(Duration::from_secs(60));
        let other_key = issue_token(
            b"another-secret-another-secret-xx",
            &claims("acme", Role::Admin, live),
        )
        .unwrap();
        let expired = issue_token(SECRET, &claims("acme", Role::Admin, 1_000)).unwrap();
        let bad_org = issue_token(SECRET, &claims("Not A Slug", Role::Admin, live)).unwrap();
        let no_exp = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &serde_json::json!({"org": "acme", "role": "admin"}),
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap();
        let bad_role = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &serde_json::json!({"org": "acme", "role": "owner", "exp": live}),
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap();
        let alg_none = {
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            format!(
                "{}.{}.",
                b64.encode(br#"{"alg":"none","typ":"JWT"}"#),
                b64.encode(format!(r#"{{"org":"acme","role":"admin","exp":{live}}}"#))
            )
        };
        assert_eq!(auth.authenticate(None), Err(AuthError::Missing));
        assert_eq!(
            auth.authenticate(Some(b"Basic abc")),
            Err(AuthError::NotBearer)
        );
        assert_eq!(
            auth.authenticate(Some(&[0xff, 0xfe])),
            Err(AuthError::NotBearer)
        );
        assert_eq!(
            auth.authenticate(Some(&bearer(&expired))),
            Err(AuthError::Expired)
        );
        for token in [
            other_key,
            bad_org,
            no_exp,
            bad_role,
            alg_none,
            "x.y.z".into(),
        ] {
            assert!(
                matches!(
                    auth.authenticate(Some(&bearer(&token))),
                    Err(AuthError::Invalid(_))
                ),
                "{token}"
            );
        }
        let huge = "a".repeat(MAX_TOKEN_LEN + 1);
        assert!(matches!(
            auth.authenticate(Some(&bearer(&huge))),
            Err(AuthError::Invalid(_))
        ));
    }

    #[test]
    fn issuer_and_audience_are_checked_when_configured() {
        let auth = Authenticator::hs256(SECRET)
            .with_issuer("https://id.example")
            .with_audience("itemgraph");
        let live = expiring_in(Duration::from_secs(60));
        let mut c = claims("acme", Role::Member, live);
        let missing = issue_token(SECRET, &c).unwrap();
        assert!(auth.authenticate(Some(&bearer(&missing))).is_err());
        c.iss = Some("https://id.example".into());
        c.aud = Some("itemgraph".into());
        let good = issue_token(SECRET, &c).unwrap();
        assert!(auth.authenticate(Some(&bearer(&good))).is_ok());
        c.aud = Some("someone-else".into());
        let wrong = issue_token(SECRET, &c).unwrap();
        assert!(auth.authenticate(Some(&bearer(&wrong))).is_err());
        // A list of audiences: accepted when the configured one is among them.
        c.aud = Some(Audience::Many(vec!["other".into(), "itemgraph".into()]));
        let listed = issue_token(SECRET, &c).unwrap();
        assert!(auth.authenticate(Some(&bearer(&listed))).is_ok());
        c.aud = Some(Audience::Many(vec!["other".into(), "another".into()]));
        let unlisted = issue_token(SECRET, &c).unwrap();
        assert!(auth.authenticate(Some(&bearer(&unlisted))).is_err());
        // Without a configured audience, a list is not looked at.
        let open = Authenticator::hs256(SECRET);
        assert!(open.authenticate(Some(&bearer(&unlisted))).is_ok());
    }

    #[test]
    fn members_are_not_admins() {
        let access = Access::Tenant {
            org: Slug::parse("acme").unwrap(),
            role: Role::Member,
            subject: None,
        };
        assert!(matches!(
            access.require_admin("add users"),
            Err(Forbidden(_))
        ));
        assert!(Access::Unrestricted.require_admin("add users").is_ok());
    }

    #[test]
    fn dynamodb_needs_auth_or_an_explicit_off() {
        let none = AuthArgs::default();
        assert!(none.authenticator(true).is_err());
        assert!(none.authenticator(false).unwrap().is_none());
        let off = AuthArgs {
            auth: Some(AuthMode::Off),
            ..Default::default()
        };
        assert!(off.authenticator(true).unwrap().is_none());
        let jwt_without_key = AuthArgs {
            auth: Some(AuthMode::Jwt),
            ..Default::default()
        };
        assert!(jwt_without_key.authenticator(false).is_err());
        let secret = AuthArgs {
            jwt_secret: Some(std::str::from_utf8(SECRET).unwrap().parse().unwrap()),
            ..Default::default()
        };
        assert!(secret.authenticator(true).unwrap().is_some());
        let contradictory = AuthArgs {
            auth: Some(AuthMode::Off),
            ..secret
        };
        assert!(contradictory.authenticator(false).is_err());
        assert!("short".parse::<JwtSecret>().is_err());
    }
}
