//! An identity provider's JWKS endpoint on loopback (a small axum app), with the keys of
//! `tests/fixtures/jwks/` (`rsa-1`, `rsa-2`: RS256; `ec-1`: ES256) and their private halves
//! in `tests/fixtures/`, to sign tokens the way the provider would.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use itemgraph::auth::{Access, Authenticator};
use itemgraph::config::AuthArgs;

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The public JWK of `kid`.
pub fn jwk(kid: &str) -> Value {
    serde_json::from_slice(&fixture(&format!("jwks/{kid}.json"))).expect("a JWK")
}

/// A token of `claims` signed with `kid`'s private key, naming `kid`.
pub fn sign(kid: &str, claims: &Value) -> String {
    let (alg, key) = match kid {
        "rsa-1" => (
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(&fixture("jwt-rs256-private.pem")),
        ),
        "rsa-2" => (
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(&fixture("jwt-rs256-2-private.pem")),
        ),
        "ec-1" => (
            Algorithm::ES256,
            EncodingKey::from_ec_pem(&fixture("jwt-es256-private.pem")),
        ),
        other => panic!("no private key for {other}"),
    };
    sign_as(alg, Some(kid), &key.expect("a PEM key"), claims)
}

/// A token signed with any key and header.
pub fn sign_as(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).expect("signing")
}

/// The claims of an Amazon Cognito ID token for `org`, in group `group`, valid an hour.
pub fn cognito(org: &str, group: &str) -> Value {
    let now = itemgraph::auth::expiring_in(Duration::ZERO);
    json!({
        "sub": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "cognito:groups": [group],
        "iss": ISSUER,
        "cognito:username": "wile",
        "aud": "itemgraph-client",
        "token_use": "id",
        "auth_time": now,
        "custom:org": org,
        "exp": now + 3600,
        "iat": now,
        "email": "wile@example.com"
    })
}

/// The issuer of [`cognito`]'s tokens.
pub const ISSUER: &str = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example";

/// What the provider serves.
struct Served {
    kids: Vec<String>,
    /// JWKs served after the fixtures' (keys of types this server may not know).
    extra: Vec<Value>,
    max_age: u64,
}

/// A running JWKS endpoint; stopped (its port closed) by [`Provider::stop`] or on drop.
pub struct Provider {
    /// Its issuer (`http://127.0.0.1:<port>`), whose discovery document names `url`.
    pub issuer: String,
    pub url: String,
    served: Arc<Mutex<Served>>,
    fetches: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Provider {
    /// Serves the keys `kids` at `http://127.0.0.1:<port>/.well-known/jwks.json` with
    /// `Cache-Control: max-age=<max_age>`.
    pub async fn start(kids: &[&str], max_age: u64) -> Provider {
        let served = Arc::new(Mutex::new(Served {
            kids: kids.iter().map(|k| (*k).to_owned()).collect(),
            extra: Vec::new(),
            max_age,
        }));
        let fetches = Arc::new(AtomicUsize::new(0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let issuer = format!("http://{addr}");
        let discovery = json!({
            "issuer": issuer,
            "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
            "id_token_signing_alg_values_supported": ["RS256", "ES256"]
        });
        let app = axum::Router::new()
            .route("/.well-known/jwks.json", axum::routing::get(keys))
            // A redirect to wherever `?to=` says.
            .route(
                "/moved",
                axum::routing::get(
                    |axum::extract::Query(q): axum::extract::Query<
                        std::collections::HashMap<String, String>,
                    >| async move {
                        (
                            axum::http::StatusCode::FOUND,
                            [(header::LOCATION, q.get("to").cloned().unwrap_or_default())],
                        )
                    },
                ),
            )
            // A key set that never ends, sent in chunks with no length.
            .route(
                "/endless.json",
                axum::routing::get(|| async {
                    let head = futures::stream::once(async {
                        Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"{\"keys\":["))
                    });
                    let padding = futures::stream::repeat_with(|| {
                        Ok(axum::body::Bytes::from(format!("{},", jwk("rsa-1"))))
                    });
                    axum::body::Body::from_stream(futures::StreamExt::chain(head, padding))
                }),
            )
            .route(
                "/.well-known/openid-configuration",
                axum::routing::get(move || async move { axum::Json(discovery) }),
            )
            .with_state((served.clone(), fetches.clone()));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Provider {
            url: format!("{issuer}/.well-known/jwks.json"),
            issuer,
            served,
            fetches,
            task,
        }
    }

    /// From now on serves these keys (a rotation).
    pub fn publish(&self, kids: &[&str]) {
        self.served.lock().unwrap().kids = kids.iter().map(|k| (*k).to_owned()).collect();
    }

    /// From now on also serves these JWKs, after the fixtures' keys.
    pub fn publish_extra(&self, extra: Vec<Value>) {
        self.served.lock().unwrap().extra = extra;
    }

    /// The base URL (`http://127.0.0.1:<port>`).
    pub fn base(&self) -> &str {
        &self.issuer
    }

    /// How many times the set was fetched.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// Stops answering: the port is closed.
    pub fn stop(&self) {
        self.task.abort();
    }

    /// An authenticator configured as `serve` would be with these flags besides
    /// `--jwt-jwks-url ISSUER=<this provider>`: Cognito's issuer and claims by default.
    pub async fn authenticator(&self, flags: &[&str]) -> anyhow::Result<Authenticator> {
        let source = format!("{ISSUER}={}", self.url);
        let mut all = vec!["--jwt-jwks-url", source.as_str()];
        all.extend_from_slice(flags);
        authenticator(&all).await
    }
}

/// An authenticator configured as `serve` would be with these flags, and Cognito's claims
/// (`custom:org`, `cognito:groups` mapped to roles).
pub async fn authenticator(flags: &[&str]) -> anyhow::Result<Authenticator> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        auth: AuthArgs,
    }
    let mut args = vec![
        "itemgraph",
        "--jwt-org-claim",
        "custom:org",
        "--jwt-role-claim",
        "cognito:groups",
        "--jwt-role-map",
        "itemgraph-admins=admin,itemgraph-members=member",
        "--jwt-audience",
        "itemgraph-client",
    ];
    args.extend_from_slice(flags);
    let cli = <Cli as clap::Parser>::try_parse_from(args)?;
    Ok(cli
        .auth
        .authenticator(true)
        .await?
        .expect("auth is on with a JWKS URL"))
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn keys(
    State((served, fetches)): State<(Arc<Mutex<Served>>, Arc<AtomicUsize>)>,
) -> impl IntoResponse {
    fetches.fetch_add(1, Ordering::SeqCst);
    let (keys, max_age) = {
        let served = served.lock().unwrap();
        let mut keys = served.kids.iter().map(|k| jwk(k)).collect::<Vec<_>>();
        keys.extend(served.extra.iter().cloned());
        (keys, served.max_age)
    };
    (
        [(header::CACHE_CONTROL, format!("public, max-age={max_age}"))],
        axum::Json(json!({ "keys": keys })),
    )
}

/// What `token` grants, verified as a request would be.
pub async fn verify(
    auth: &Authenticator,
    token: &str,
) -> Result<Access, itemgraph::auth::AuthError> {
    auth.verify_until(Some(format!("Bearer {token}").as_bytes()))
        .await
        .map(|(access, _)| access)
}
