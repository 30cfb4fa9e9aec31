//! The identity provider's signing keys, from its JWKS URL (`--jwt-jwks-url`).
//!
//! - **Fetched at start**: a server that cannot fetch every set refuses to start, saying
//!   which URL failed and why. Starting without keys would answer every caller 401 until
//!   the provider came back, a failure nobody would see at deploy time.
//! - **Cached** as the response's `Cache-Control: max-age` says (between
//!   `--jwks-min-refresh` and a day; an hour when it says nothing). A stale set is still
//!   used while a refresh runs beside the request that noticed.
//! - **Refreshed when a token names an unknown `kid`** (the provider rotated), at most once
//!   per `--jwks-min-refresh` however many such tokens arrive, so a flood of forged `kid`s
//!   cannot make the server hammer the provider.
//! - **The last good set is kept** while the provider is unreachable or answers nonsense:
//!   logged, and counted in `itemgraph_jwks_refresh_total{outcome="error"}`.
//!
//! Only asymmetric keys are taken (RSA, EC, Ed25519); a JWKS `oct` (HMAC) key is skipped,
//! so no key from the provider can verify an HS* token. Keys marked `"use": "enc"` are
//! skipped too. Which algorithms a token may name is the authenticator's allow-list.
//!
//! - **Keys are read one by one**: a key this server cannot read (Ed448, secp256k1, a
//!   type published after this version) is skipped, logged and counted
//!   (`itemgraph_jwks_keys_skipped_total`), and the set's other keys are used.
//! - **Each key is bound to its issuer** ([`KeySource`]): it verifies only tokens whose
//!   `iss` is the issuer whose discovery document or `--jwt-jwks-url ISSUER=URL` named
//!   its set, so one provider's keys never vouch for another's tokens.
//! - **What is fetched is bounded**: redirects (three at most) only to `https://` or to
//!   `http://` on loopback, as the URLs themselves; a key set read up to
//!   [`MAX_JWKS_BYTES`] and a discovery document up to [`MAX_DISCOVERY_BYTES`], counted
//!   as the body arrives, so a chunked or lying response is cut off there.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

/// The longest a fetched set is trusted without asking again.
const MAX_FRESH: Duration = Duration::from_secs(24 * 3600);
/// How long a set is trusted when the response does not say.
const DEFAULT_FRESH: Duration = Duration::from_secs(3600);
/// One fetch, connection included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest JWKS document read: real ones are a few kilobytes.
pub const MAX_JWKS_BYTES: usize = 256 * 1024;
/// Largest OpenID discovery document read: real ones are a few kilobytes.
pub const MAX_DISCOVERY_BYTES: usize = 64 * 1024;
/// Redirects followed at most by one fetch.
const MAX_REDIRECTS: usize = 3;

/// Where a key set is fetched, and the issuer whose tokens its keys verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySource {
    pub url: String,
    /// `None`: the keys verify any issuer the authenticator accepts (refused by the
    /// configuration's check wherever a JWKS is served).
    pub issuer: Option<String>,
}

/// One key of the set.
#[derive(Clone)]
pub struct Key {
    pub key: DecodingKey,
    /// The `alg` the JWK pins, if any: a token must then name exactly it.
    pub alg: Option<Algorithm>,
    /// The issuer whose tokens it verifies ([`KeySource::issuer`]).
    pub issuer: Option<Arc<str>>,
}

/// The keys of every configured URL, by `kid`.
struct Set {
    keys: HashMap<String, Vec<Key>>,
    fresh_until: Instant,
}

/// The cached key sets and their refresh.
pub struct Jwks {
    urls: Vec<KeySource>,
    client: reqwest::Client,
    min_refresh: Duration,
    set: RwLock<Arc<Set>>,
    /// When a fetch was last started (successful or not): refreshes are at most one per
    /// `min_refresh`.
    last_attempt: std::sync::Mutex<Instant>,
    /// Held while fetching, so concurrent callers wait for one fetch instead of each
    /// starting one.
    fetching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field("urls", &self.urls)
            .finish_non_exhaustive()
    }
}

impl Jwks {
    /// Fetches every URL's set; refused when any cannot be fetched or holds no usable key.
    pub async fn fetch(urls: Vec<KeySource>, min_refresh: Duration) -> anyhow::Result<Arc<Jwks>> {
        anyhow::ensure!(!urls.is_empty(), "no JWKS URL");
        let client = http_client()?;
        let (keys, fresh_for, failures) = fetch_all(&client, &urls, min_refresh).await;
        if let Some(failure) = failures.into_iter().next() {
            anyhow::bail!("{failure}");
        }
        let count: usize = keys.values().map(Vec::len).sum();
        tracing::info!(keys = count, urls = ?urls, "JWKS fetched");
        crate::metrics::record_jwks_refresh(true);
        Ok(Arc::new(Jwks {
            urls,
            client,
            min_refresh,
            set: RwLock::new(Arc::new(Set {
                keys,
                fresh_until: Instant::now() + fresh_for,
            })),
            last_attempt: std::sync::Mutex::new(Instant::now()),
            fetching: tokio::sync::Mutex::new(()),
        }))
    }

    /// The keys with this `kid`; none when the set does not hold it.
    pub fn keys(&self, kid: &str) -> Vec<Key> {
        self.current().keys.get(kid).cloned().unwrap_or_default()
    }

    fn current(&self) -> Arc<Set> {
        self.set.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Starts a refresh beside the caller when the set is stale (and none runs).
    pub fn refresh_if_stale(self: &Arc<Self>) {
        if Instant::now() < self.current().fresh_until || !self.may_attempt() {
            return;
        }
        let jwks = self.clone();
        tokio::spawn(async move { jwks.refresh().await });
    }

    /// A token named an unknown `kid`: refresh now, unless one ran within
    /// `--jwks-min-refresh`. The caller then looks the `kid` up again.
    pub async fn refresh_for_unknown_kid(&self) {
        self.refresh().await;
    }

    /// Whether `min_refresh` has passed since the last attempt.
    fn may_attempt(&self) -> bool {
        let last = *self.last_attempt.lock().unwrap_or_else(|e| e.into_inner());
        last.elapsed() >= self.min_refresh
    }

    /// One refresh of every URL, if `min_refresh` allows. A URL that fails keeps its keys
    /// (the whole previous set is kept: keys are merged by `kid`, not by URL).
    async fn refresh(&self) {
        let _fetching = self.fetching.lock().await;
        // Checked under the lock: of callers that queued behind one fetch, only the first
        // fetches; the others find its result.
        if !self.may_attempt() {
            return;
        }
        *self.last_attempt.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        let (keys, fresh_for, failures) =
            fetch_all(&self.client, &self.urls, self.min_refresh).await;
        for failure in &failures {
            tracing::warn!(%failure, "keeping the last good JWKS");
        }
        let failed = !failures.is_empty();
        crate::metrics::record_jwks_refresh(!failed);
        let previous = self.current();
        let next = if failed {
            // Whatever was fetched joins what was known; the old keys stay, and the set is
            // asked again after `min_refresh`.
            let mut merged = previous.keys.clone();
            for (kid, list) in keys {
                merged.insert(kid, list);
            }
            Set {
                keys: merged,
                fresh_until: Instant::now() + self.min_refresh,
            }
        } else {
            Set {
                keys,
                fresh_until: Instant::now() + fresh_for,
            }
        };
        *self.set.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
    }
}

/// The JWKS URL of an OpenID Connect issuer, from its discovery document
/// (`<issuer>/.well-known/openid-configuration`), whose `issuer` must be exactly it.
pub async fn discover(issuer: &str) -> anyhow::Result<String> {
    #[derive(serde::Deserialize)]
    struct Discovery {
        issuer: String,
        jwks_uri: String,
    }
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let response = http_client()?
        .get(&url)
        .send()
        .await
        // `{:#}`: with its causes (reqwest's says only "error following redirect").
        .map_err(|e| anyhow::anyhow!("fetching {url}: {:#}", anyhow::Error::new(e)))?;
    anyhow::ensure!(
        response.status().is_success(),
        "fetching {url}: HTTP {}",
        response.status()
    );
    let body = read_capped(response, MAX_DISCOVERY_BYTES, "the discovery document")
        .await
        .map_err(|e| anyhow::anyhow!("reading {url}: {e}"))?;
    let document: Discovery = serde_json::from_slice(&body)
        .map_err(|e| anyhow::anyhow!("{url} is not an OpenID discovery document: {e}"))?;
    anyhow::ensure!(
        document.issuer == issuer,
        "{url} is the discovery document of {}, not of {issuer}",
        document.issuer
    );
    Ok(document.jwks_uri)
}

/// The HTTP client of the fetches: HTTPS (rustls) with the system's roots; a redirect is
/// followed only where a URL could have pointed in the first place (`https://`, or
/// `http://` on loopback), [`MAX_REDIRECTS`] at most.
fn http_client() -> anyhow::Result<reqwest::Client> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if redirect_allowed(attempt.url()) {
            attempt.follow()
        } else {
            let to = format!(
                "{}://{}",
                attempt.url().scheme(),
                attempt.url().host_str().unwrap_or("")
            );
            attempt.error(format!(
                "a redirect to {to} (only https://, or http:// on loopback, is followed)"
            ))
        }
    });
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .redirect(policy)
        .build()
        .map_err(|e| anyhow::anyhow!("building the JWKS client: {e}"))
}

/// Whether keys may be fetched from a URL of this scheme and host: `https://` from any
/// host, `http://` from a loopback address only (a local provider, a test). The rule of
/// `--jwt-jwks-url`, of a discovered `jwks_uri`, and of every redirect.
pub fn fetchable(scheme: &str, host: &str) -> bool {
    match scheme {
        "https" => !host.is_empty(),
        "http" => {
            host.eq_ignore_ascii_case("localhost")
                || host
                    .trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// Whether a redirect may be followed to `url` ([`fetchable`]).
fn redirect_allowed(url: &reqwest::Url) -> bool {
    fetchable(url.scheme(), url.host_str().unwrap_or_default())
}

/// A response's body, refused as soon as more than `max` bytes have arrived (whatever its
/// `Content-Length` said, or without one: chunked).
async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
    what: &str,
) -> Result<Vec<u8>, String> {
    let too_large = || format!("{what} is over {max} bytes");
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > max {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Every URL's keys by `kid` (fetched all at once), how long the least fresh of them may be
/// trusted, and why each URL that failed did.
async fn fetch_all(
    client: &reqwest::Client,
    urls: &[KeySource],
    min_refresh: Duration,
) -> (HashMap<String, Vec<Key>>, Duration, Vec<String>) {
    let fetched = futures::future::join_all(
        urls.iter()
            .map(|source| fetch_one(client, source, min_refresh)),
    )
    .await;
    let mut keys = HashMap::new();
    let mut fresh_for = MAX_FRESH;
    let mut failures = Vec::new();
    for (KeySource { url, .. }, result) in urls.iter().zip(fetched) {
        match result {
            Ok((set, fresh)) => {
                merge(&mut keys, set);
                fresh_for = fresh_for.min(fresh);
            }
            Err(why) => failures.push(format!("fetching the JWKS at {url}: {why}")),
        }
    }
    (keys, fresh_for, failures)
}

/// One URL's keys by `kid`, and how long they may be trusted; an error when it holds none.
async fn fetch_one(
    client: &reqwest::Client,
    source: &KeySource,
    min_refresh: Duration,
) -> Result<(HashMap<String, Vec<Key>>, Duration), String> {
    let response = client
        .get(&source.url)
        .send()
        .await
        .map_err(|e| format!("{:#}", anyhow::Error::new(e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let fresh = response
        .headers()
        .get_all(reqwest::header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|directive| {
            let (name, value) = directive.trim().split_once('=')?;
            name.eq_ignore_ascii_case("max-age")
                .then(|| value.trim().parse::<u64>().ok())
                .flatten()
        })
        .map_or(DEFAULT_FRESH, Duration::from_secs)
        .clamp(min_refresh, MAX_FRESH.max(min_refresh));
    let body = read_capped(response, MAX_JWKS_BYTES, "the JWKS").await?;
    let (keys, skipped) = parse_keys(&body, source.issuer.as_deref())?;
    if skipped > 0 {
        tracing::warn!(
            url = %source.url,
            skipped,
            "JWKS keys this server cannot read were skipped; the others are used"
        );
        crate::metrics::record_jwks_keys_skipped(skipped);
    }
    if keys.is_empty() {
        return Err(
            "it holds no signing key this server can use (RSA, EC or Ed25519, with a \
             `kid`)"
                .into(),
        );
    }
    Ok((keys, fresh))
}

/// The usable keys of a JWK set's document by `kid`, bound to `issuer`, and how many keys
/// were skipped as unreadable. Each key is read on its own: one this server does not know
/// (a new key type or curve) is skipped, never the whole set.
fn parse_keys(
    body: &[u8],
    issuer: Option<&str>,
) -> Result<(HashMap<String, Vec<Key>>, usize), String> {
    #[derive(serde::Deserialize)]
    struct Document {
        keys: Vec<serde_json::Value>,
    }
    let document: Document =
        serde_json::from_slice(body).map_err(|e| format!("not a JWK set: {e}"))?;
    let issuer: Option<Arc<str>> = issuer.map(Arc::from);
    let mut keys: HashMap<String, Vec<Key>> = HashMap::new();
    let mut skipped = 0;
    for value in document.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            skipped += 1;
            continue;
        };
        let Some(kid) = jwk.common.key_id.clone() else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        // Never an HMAC key from a JWKS: an HS* token could then be signed by anyone who
        // read the set.
        if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
            continue;
        }
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(alg) => match signing_algorithm(alg) {
                Some(alg) => Some(alg),
                // An encryption or HMAC algorithm pinned: not a signing key for us.
                None => continue,
            },
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            skipped += 1;
            continue;
        };
        keys.entry(kid).or_default().push(Key {
            key,
            alg,
            issuer: issuer.clone(),
        });
    }
    Ok((keys, skipped))
}

fn merge(into: &mut HashMap<String, Vec<Key>>, from: HashMap<String, Vec<Key>>) {
    for (kid, list) in from {
        into.entry(kid).or_default().extend(list);
    }
}

/// The asymmetric signing algorithm a JWK's `alg` names.
fn signing_algorithm(alg: KeyAlgorithm) -> Option<Algorithm> {
    Some(match alg {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}
