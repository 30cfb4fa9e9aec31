//! Who is calling, and what they may see and do.
//!
//! A caller proves who they are with a bearer JWT (`Authorization: Bearer <token>`)
//! signed by the deployment's identity provider: with a key of its JWKS chosen by the
//! token's `kid` ([`Jwks`]: `--jwt-jwks-url`, followed through rotations), with one public
//! key (`--jwt-public-key`: RS256 or ES256), or HS256 with a shared secret
//! (`--jwt-secret`). `exp` is required; `nbf`, `iat`, `iss` and `aud` are checked as
//! configured, with a leeway for clock skew and an optional maximum age. The claims name
//! the caller's organization and role where the provider puts them ([`ClaimMapping`]);
//! the result is an [`Access`], which every resolver and mutation consults (see
//! `graphql::RequestContext`): another organization's data answers exactly as if it did
//! not exist, and only an admin manages users and changes orders.
//!
//! `--auth off` makes every caller [`Access::Unrestricted`]: for local exploration of the
//! embedded demo store only. Serving a DynamoDB table without auth needs `--auth off`
//! spelled out (see `config::AuthArgs::authenticator`).
//!
//! The files: this one the authenticator and [`Access`]; `claims` the claim mapping;
//! `jwks` the provider's keys.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use clap::ValueEnum;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod claims;
mod jwks;

pub use claims::{parse_role_map_entry, ClaimMapping};
pub use jwks::{discover, fetchable, Jwks, KeySource};

use crate::chart::kinds::Tenant;

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
        org: Tenant,
        role: Role,
        subject: Option<String>,
    },
}

impl Access {
    /// Whether the caller may see anything of organization `org`.
    pub fn sees<T: AsRef<str> + ?Sized>(&self, org: &T) -> bool {
        match self {
            Access::Unrestricted => true,
            Access::Tenant { org: own, .. } => own.as_str() == org.as_ref(),
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
    pub fn org(&self) -> Option<&Tenant> {
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
    /// Signed with a key the identity provider does not publish (an unknown `kid`).
    #[error("invalid token: signed with a key the identity provider does not publish")]
    UnknownKey,
}

impl AuthError {
    pub const CODE: &'static str = "UNAUTHENTICATED";
}

/// Longest token accepted: real ones are well under 2 KB (an Entra ID token with many
/// groups a few); this bounds the work a forged one causes before its signature is checked.
const MAX_TOKEN_LEN: usize = 8 * 1024;

/// Shortest HS256 secret accepted: 256 bits as hex would be 64; 32 characters is the
/// floor below which a secret is guessable.
pub const MIN_JWT_SECRET_LEN: usize = 32;

/// The algorithms a JWKS-verified token may name unless told otherwise: every asymmetric
/// one jsonwebtoken verifies. Never `none`, never HS*.
pub const JWKS_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Where the keys that verify a token come from.
#[derive(Clone)]
enum Keys {
    /// One key, one algorithm (`--jwt-secret`, `--jwt-public-key`).
    Static {
        key: DecodingKey,
        algorithm: Algorithm,
    },
    /// The provider's JWKS, the key chosen by the token's `kid`, the algorithm from an
    /// allow-list.
    Jwks {
        jwks: Arc<Jwks>,
        algorithms: Vec<Algorithm>,
    },
}

/// Checks bearer tokens: their signature, `exp` (and `nbf`, `iat`, `iss`, `aud` as
/// configured), then maps their claims to an [`Access`] ([`ClaimMapping`]).
#[derive(Clone)]
pub struct Authenticator {
    keys: Keys,
    validation: Validation,
    mapping: ClaimMapping,
    /// Clock skew allowed on `exp`, `nbf` and `iat`, in seconds.
    leeway: u64,
    /// `--jwt-max-age`: a token issued longer ago is refused, whatever its `exp`.
    max_age: Option<u64>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = match &self.keys {
            Keys::Static { algorithm, .. } => format!("{algorithm:?}"),
            Keys::Jwks { jwks, algorithms } => format!("{jwks:?} {algorithms:?}"),
        };
        f.debug_struct("Authenticator")
            .field("keys", &keys)
            .field("mapping", &self.mapping)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// HS256 tokens signed with `secret`.
    pub fn hs256(secret: &[u8]) -> Authenticator {
        Self::with(Keys::Static {
            key: DecodingKey::from_secret(secret),
            algorithm: Algorithm::HS256,
        })
    }

    /// RS256 tokens when `pem` is an RSA public key, ES256 when it is a P-256 one.
    pub fn public_key_pem(pem: &[u8]) -> anyhow::Result<Authenticator> {
        let (key, algorithm) = if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
            (key, Algorithm::RS256)
        } else if let Ok(key) = DecodingKey::from_ec_pem(pem) {
            (key, Algorithm::ES256)
        } else {
            bail!("not a PEM RSA or EC (P-256) public key")
        };
        Ok(Self::with(Keys::Static { key, algorithm }))
    }

    /// Tokens signed by a key of `jwks`, naming one of `algorithms` (none of them HS* or
    /// `none`: refused here).
    pub fn jwks(jwks: Arc<Jwks>, algorithms: Vec<Algorithm>) -> anyhow::Result<Authenticator> {
        anyhow::ensure!(!algorithms.is_empty(), "no algorithm is allowed");
        if let Some(alg) = algorithms
            .iter()
            .find(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
        {
            bail!("{alg:?} is never accepted with a JWKS: its keys are public");
        }
        Ok(Self::with(Keys::Jwks { jwks, algorithms }))
    }

    fn with(keys: Keys) -> Authenticator {
        // One key: its algorithm is every token's, set once. A JWKS's is the token's own,
        // set per token (`decode`).
        let algorithm = match &keys {
            Keys::Static { algorithm, .. } => *algorithm,
            Keys::Jwks { .. } => Algorithm::HS256,
        };
        let mut validation = Validation::new(algorithm);
        validation.set_required_spec_claims(&["exp"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.leeway = 0;
        // A token with an `aud` is refused unless the server is told which audience to
        // expect (jsonwebtoken's rule); without one, `aud` is not looked at.
        validation.validate_aud = false;
        Authenticator {
            keys,
            validation,
            mapping: ClaimMapping::default(),
            leeway: 0,
            max_age: None,
        }
    }

    /// Also require `iss` to be one of `issuers`.
    pub fn with_issuers(mut self, issuers: &[String]) -> Authenticator {
        if !issuers.is_empty() {
            self.validation.set_issuer(issuers);
            self.validation.required_spec_claims.insert("iss".into());
        }
        self
    }

    /// Also require `iss` to be `issuer`.
    pub fn with_issuer(self, issuer: &str) -> Authenticator {
        self.with_issuers(&[issuer.to_owned()])
    }

    /// Also require `aud` to be `audience`.
    pub fn with_audience(mut self, audience: &str) -> Authenticator {
        self.validation.set_audience(&[audience]);
        self.validation.validate_aud = true;
        self.validation.required_spec_claims.insert("aud".into());
        self
    }

    /// Where the organization and the role are read ([`ClaimMapping`]).
    pub fn with_mapping(mut self, mapping: ClaimMapping) -> Authenticator {
        self.mapping = mapping;
        self
    }

    /// Clock skew allowed on `exp`, `nbf` and `iat` (none by default; `--jwt-leeway`).
    pub fn with_leeway(mut self, leeway: Duration) -> Authenticator {
        self.leeway = leeway.as_secs();
        self.validation.leeway = self.leeway;
        self
    }

    /// Refuse tokens issued longer than `max_age` ago (their `iat` is then required).
    pub fn with_max_age(mut self, max_age: Duration) -> Authenticator {
        self.max_age = Some(max_age.as_secs());
        self.validation.required_spec_claims.insert("iat".into());
        self
    }

    /// The access an `Authorization` header value grants.
    pub fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Access, AuthError> {
        self.authenticate_until(authorization)
            .map(|(access, _)| access)
    }

    /// [`authenticate`](Self::authenticate), with when the token stops being accepted
    /// (seconds since the Unix epoch: its `exp` plus the leeway, or its `iat` plus the
    /// maximum age if sooner): a subscription ends then.
    ///
    /// With a JWKS, a token whose `kid` the cached set does not hold is refused here with
    /// [`AuthError::UnknownKey`]; [`verify_until`](Self::verify_until) refreshes the set
    /// and tries again.
    pub fn authenticate_until(
        &self,
        authorization: Option<&[u8]>,
    ) -> Result<(Access, u64), AuthError> {
        let token = bearer_token(authorization)?;
        let claims = self.claims(token)?;
        let now = now_secs();
        let exp = claims.get("exp").and_then(Value::as_u64).ok_or_else(|| {
            AuthError::Invalid("the `exp` claim must be a number of seconds".into())
        })?;
        let mut until = exp.saturating_add(self.leeway);
        // RFC 7519: valid only *before* `exp` (jsonwebtoken accepts `exp == now`); the
        // same rule as a running subscription's end (`TokenExpiry::expired`).
        if until <= now {
            return Err(AuthError::Expired);
        }
        let iat = claims.get("iat").and_then(Value::as_u64);
        if iat.is_some_and(|iat| iat > now.saturating_add(self.leeway)) {
            return Err(AuthError::Invalid("issued in the future (`iat`)".into()));
        }
        if let Some(max_age) = self.max_age {
            let iat = iat.ok_or_else(|| {
                AuthError::Invalid("the `iat` claim is required (--jwt-max-age)".into())
            })?;
            let end = iat.saturating_add(max_age);
            if end <= now {
                return Err(AuthError::Expired);
            }
            until = until.min(end);
        }
        Ok((self.mapping.access(&claims)?, until))
    }

    /// [`authenticate_until`](Self::authenticate_until), refreshing the JWKS when the token
    /// names a key it does not hold (at most once per `--jwks-min-refresh`), or when it is
    /// stale (beside the request).
    pub async fn verify_until(
        &self,
        authorization: Option<&[u8]>,
    ) -> Result<(Access, u64), AuthError> {
        let Keys::Jwks { jwks, .. } = &self.keys else {
            return self.authenticate_until(authorization);
        };
        jwks.refresh_if_stale();
        match self.authenticate_until(authorization) {
            Err(AuthError::UnknownKey) => {
                jwks.refresh_for_unknown_kid().await;
                self.authenticate_until(authorization)
            }
            other => other,
        }
    }

    fn claims(&self, token: &str) -> Result<Map<String, Value>, AuthError> {
        match &self.keys {
            Keys::Static { key, algorithm } => self.decode(token, key, *algorithm),
            Keys::Jwks { jwks, algorithms } => {
                let header = jsonwebtoken::decode_header(token)
                    .map_err(|_| AuthError::Invalid("malformed".into()))?;
                if !algorithms.contains(&header.alg) {
                    return Err(AuthError::Invalid(format!(
                        "the {:?} algorithm is not accepted (--jwt-algorithms)",
                        header.alg
                    )));
                }
                let kid = header
                    .kid
                    .ok_or_else(|| AuthError::Invalid("the token names no key (`kid`)".into()))?;
                let keys = jwks.keys(&kid);
                if keys.is_empty() {
                    return Err(AuthError::UnknownKey);
                }
                let mut last = AuthError::Invalid("wrong algorithm".into());
                for key in keys
                    .iter()
                    .filter(|k| k.alg.is_none_or(|a| a == header.alg))
                {
                    match self.decode(token, &key.key, header.alg) {
                        // A key verifies only its own issuer's tokens: a provider whose
                        // keys another issuer's tokens name vouches for nothing of theirs.
                        Ok(claims)
                            if key.issuer.as_deref().is_some_and(|issuer| {
                                claims.get("iss").and_then(Value::as_str) != Some(issuer)
                            }) =>
                        {
                            last = AuthError::Invalid(
                                "signed with a key of another issuer than its `iss`".into(),
                            );
                        }
                        Ok(claims) => return Ok(claims),
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
        }
    }

    fn decode(
        &self,
        token: &str,
        key: &DecodingKey,
        algorithm: Algorithm,
    ) -> Result<Map<String, Value>, AuthError> {
        use jsonwebtoken::errors::ErrorKind;
        // jsonwebtoken checks every listed algorithm against the key's family, so the list
        // is exactly the token's: already so for one static key, copied for a JWKS's.
        let copied;
        let validation = if self.validation.algorithms == [algorithm] {
            &self.validation
        } else {
            let mut v = self.validation.clone();
            v.algorithms = vec![algorithm];
            copied = v;
            &copied
        };
        jsonwebtoken::decode::<Map<String, Value>>(token, key, validation)
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
                _ => AuthError::Invalid("malformed".into()),
            })
    }
}

/// The token of an `Authorization: Bearer <token>` value.
fn bearer_token(authorization: Option<&[u8]>) -> Result<&str, AuthError> {
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
    Ok(token)
}

/// Signs any claims with an HS256 secret (`itemgraph token` in a provider's shape).
pub fn issue_claims(secret: &[u8], claims: &Map<String, Value>) -> anyhow::Result<String> {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret),
    )
    .context("signing the token")
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

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
                org: Tenant::parse("acme").unwrap(),
                role: Role::Admin,
                subject: Some("wile".into()),
            }
        );
        assert!(access.sees(&Tenant::parse("acme").unwrap()));
        assert!(!access.sees(&Tenant::parse("globex").unwrap()));
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
        let bad_org = issue_token(SECRET, &claims("Not A Tenant", Role::Admin, live)).unwrap();
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
            org: Tenant::parse("acme").unwrap(),
            role: Role::Member,
            subject: None,
        };
        assert!(matches!(
            access.require_admin("add users"),
            Err(Forbidden(_))
        ));
        assert!(Access::Unrestricted.require_admin("add users").is_ok());
    }
}
