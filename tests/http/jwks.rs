//! Tokens of an identity provider that publishes its keys at a JWKS URL (a small axum app
//! on loopback, `common::jwks`), configured as `serve` is (`--jwt-jwks-url`, Cognito's
//! claims mapped by `--jwt-org-claim`, `--jwt-role-claim`, `--jwt-role-map`): a key
//! rotation (tokens of both keys accepted across the switch, then only the new), the
//! provider unreachable (the last set kept), a flood of forged `kid`s (no more fetches than
//! `--jwks-min-refresh` allows), RS256 and ES256 keys, algorithms not allowed, a start
//! without the set, and a request served end to end.

use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::json;

use crate::common::jwks::{authenticator, cognito, sign, sign_as, verify, Provider, ISSUER};
use crate::common::server::TestServer;
use itemgraph::auth::{Access, AuthError, Role};

fn tenant(org: &str, role: Role) -> Access {
    Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse(org).unwrap(),
        role,
        subject: Some("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee".into()),
    }
}

/// Polls `check` until it holds, for at most 10 s.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_key_rotation_is_followed_and_the_old_key_dropped_when_the_provider_drops_it() {
    // The set is cached for one second (`max-age=1`), refreshed at most every second.
    let provider = Provider::start(&["rsa-1"], 1).await;
    let auth = provider
        .authenticator(&["--jwks-min-refresh", "1s"])
        .await
        .unwrap();
    let old = sign("rsa-1", &cognito("acme", "itemgraph-admins"));
    let new = sign("rsa-2", &cognito("globex", "itemgraph-members"));
    assert_eq!(verify(&auth, &old).await, Ok(tenant("acme", Role::Admin)));
    assert_eq!(provider.fetches(), 1, "fetched once, at start");

    // The provider publishes its next key beside the current one and starts signing with
    // it: the unknown `kid` fetches the set again (once the interval allows).
    provider.publish(&["rsa-1", "rsa-2"]);
    tokio::time::sleep(Duration::from_millis(1050)).await;
    assert_eq!(
        verify(&auth, &new).await,
        Ok(tenant("globex", Role::Member))
    );
    assert_eq!(verify(&auth, &old).await, Ok(tenant("acme", Role::Admin)));
    assert_eq!(provider.fetches(), 2);

    // The old key is withdrawn: once the cached set goes stale and is fetched again, the
    // old key's tokens are refused and the new key's still accepted.
    provider.publish(&["rsa-2"]);
    eventually("the withdrawn key refused", async || {
        verify(&auth, &old).await == Err(AuthError::UnknownKey)
    })
    .await;
    assert_eq!(
        verify(&auth, &new).await,
        Ok(tenant("globex", Role::Member))
    );
}

#[tokio::test]
async fn an_unreachable_provider_leaves_the_last_good_set_in_use() {
    // This test process's metrics, to read the failed refreshes off.
    itemgraph::metrics::install();
    let provider = Provider::start(&["rsa-1", "ec-1"], 1).await;
    let auth = provider
        .authenticator(&["--jwks-min-refresh", "1s"])
        .await
        .unwrap();
    let rsa = sign("rsa-1", &cognito("acme", "itemgraph-members"));
    let ec = sign("ec-1", &cognito("initech", "itemgraph-admins"));
    provider.stop();
    // Past the set's one-second life, and past several refresh intervals: every refresh
    // fails, the keys stay.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for _ in 0..5 {
        assert_eq!(verify(&auth, &rsa).await, Ok(tenant("acme", Role::Member)));
        assert_eq!(verify(&auth, &ec).await, Ok(tenant("initech", Role::Admin)));
        // An unknown key cannot be fetched either: refused, and the known ones still work.
        let unknown = sign("rsa-2", &cognito("acme", "itemgraph-admins"));
        assert_eq!(verify(&auth, &unknown).await, Err(AuthError::UnknownKey));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let metrics = itemgraph::metrics::render().expect("this process's recorder");
    let failed = metrics
        .lines()
        .find(|l| l.starts_with(r#"itemgraph_jwks_refresh_total{outcome="error"}"#))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(failed >= 1, "failed refreshes counted: {metrics}");
}

#[tokio::test]
async fn a_flood_of_forged_key_ids_fetches_no_more_than_the_interval_allows() {
    let provider = Provider::start(&["rsa-1"], 3600).await;
    let auth = provider
        .authenticator(&["--jwks-min-refresh", "1s"])
        .await
        .unwrap();
    let key =
        EncodingKey::from_rsa_pem(include_bytes!("../fixtures/jwt-rs256-2-private.pem")).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let started = Instant::now();
    let forged: Vec<String> = (0..300)
        .map(|i| {
            sign_as(
                Algorithm::RS256,
                Some(&format!("forged-{i}")),
                &key,
                &cognito("acme", "itemgraph-admins"),
            )
        })
        .collect();
    let answers = futures::future::join_all(forged.iter().map(|t| verify(&auth, t))).await;
    assert!(answers.iter().all(|a| *a == Err(AuthError::UnknownKey)));
    // Sequentially too, for a while: one fetch per interval at the most.
    for token in forged.iter().take(40) {
        assert_eq!(verify(&auth, token).await, Err(AuthError::UnknownKey));
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let intervals = started.elapsed().as_secs() as usize + 1;
    let fetched = provider.fetches() - 1;
    assert!(
        (1..=intervals).contains(&fetched),
        "{fetched} fetches in {:?} for 340 forged tokens",
        started.elapsed()
    );
    // The real key still works.
    let real = sign("rsa-1", &cognito("acme", "itemgraph-admins"));
    assert_eq!(verify(&auth, &real).await, Ok(tenant("acme", Role::Admin)));
}

#[tokio::test]
async fn only_allowed_algorithms_and_the_keys_own_are_accepted() {
    let provider = Provider::start(&["rsa-1", "ec-1"], 3600).await;
    let only_rs256 = provider
        .authenticator(&["--jwt-algorithms", "RS256"])
        .await
        .unwrap();
    let ec = sign("ec-1", &cognito("acme", "itemgraph-admins"));
    let rsa = sign("rsa-1", &cognito("acme", "itemgraph-admins"));
    assert_eq!(
        verify(&only_rs256, &rsa).await,
        Ok(tenant("acme", Role::Admin))
    );
    match verify(&only_rs256, &ec).await {
        Err(AuthError::Invalid(why)) => assert!(why.contains("ES256"), "{why}"),
        other => panic!("{other:?}"),
    }
    let all = provider.authenticator(&[]).await.unwrap();
    assert_eq!(verify(&all, &ec).await, Ok(tenant("acme", Role::Admin)));
    // The RSA key's public half used as an HMAC secret (the classic confusion): HS256 is
    // never accepted with a JWKS.
    let public = include_bytes!("../fixtures/jwt-rs256-public.pem");
    let confused = sign_as(
        Algorithm::HS256,
        Some("rsa-1"),
        &EncodingKey::from_secret(public),
        &cognito("acme", "itemgraph-admins"),
    );
    assert!(matches!(
        verify(&all, &confused).await,
        Err(AuthError::Invalid(_))
    ));
    // An EC token naming the RSA key's id: the key does not verify it.
    let mismatched = sign_as(
        Algorithm::ES256,
        Some("rsa-1"),
        &EncodingKey::from_ec_pem(include_bytes!("../fixtures/jwt-es256-private.pem")).unwrap(),
        &cognito("acme", "itemgraph-admins"),
    );
    assert!(matches!(
        verify(&all, &mismatched).await,
        Err(AuthError::Invalid(_))
    ));
    // `alg: none`, and no `kid`.
    let unsigned = {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        format!(
            "{}.{}.",
            b64.encode(br#"{"alg":"none","typ":"JWT","kid":"rsa-1"}"#),
            b64.encode(cognito("acme", "itemgraph-admins").to_string())
        )
    };
    assert!(matches!(
        verify(&all, &unsigned).await,
        Err(AuthError::Invalid(_))
    ));
    let no_kid = sign_as(
        Algorithm::RS256,
        None,
        &EncodingKey::from_rsa_pem(include_bytes!("../fixtures/jwt-rs256-private.pem")).unwrap(),
        &cognito("acme", "itemgraph-admins"),
    );
    match verify(&all, &no_kid).await {
        Err(AuthError::Invalid(why)) => assert!(why.contains("kid"), "{why}"),
        other => panic!("{other:?}"),
    }
    // HS* cannot even be configured.
    let refused = provider
        .authenticator(&["--jwt-algorithms", "RS256,HS256"])
        .await;
    assert!(refused.is_err());
}

#[tokio::test]
async fn a_start_without_the_set_is_refused_naming_the_url() {
    let provider = Provider::start(&["rsa-1"], 3600).await;
    provider.stop();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let error = format!("{:#}", provider.authenticator(&[]).await.unwrap_err());
    assert!(error.contains(&provider.url), "{error}");
    // A set without a usable key: refused too.
    let empty = Provider::start(&[], 3600).await;
    let error = format!("{:#}", empty.authenticator(&[]).await.unwrap_err());
    assert!(error.contains("no signing key"), "{error}");
}

#[tokio::test]
async fn issuer_leeway_and_max_age_are_checked() {
    let provider = Provider::start(&["rsa-1"], 3600).await;
    let auth = provider
        .authenticator(&["--jwt-issuer", ISSUER, "--jwt-max-age", "10m"])
        .await
        .unwrap();
    let good = cognito("acme", "itemgraph-admins");
    assert_eq!(
        verify(&auth, &sign("rsa-1", &good)).await,
        Ok(tenant("acme", Role::Admin))
    );
    let mut other_issuer = good.clone();
    other_issuer["iss"] = "https://another.example".into();
    assert!(verify(&auth, &sign("rsa-1", &other_issuer)).await.is_err());
    // Expired 30 s ago: within the default 60 s of leeway.
    let now = itemgraph::auth::expiring_in(Duration::ZERO);
    let mut skewed = good.clone();
    skewed["exp"] = json!(now - 30);
    skewed["iat"] = json!(now - 300);
    assert!(verify(&auth, &sign("rsa-1", &skewed)).await.is_ok());
    let mut expired = good.clone();
    expired["exp"] = json!(now - 120);
    assert_eq!(
        verify(&auth, &sign("rsa-1", &expired)).await,
        Err(AuthError::Expired)
    );
    // Issued 20 minutes ago, still within its own `exp`: past --jwt-max-age.
    let mut old = good.clone();
    old["iat"] = json!(now - 1200);
    assert_eq!(
        verify(&auth, &sign("rsa-1", &old)).await,
        Err(AuthError::Expired)
    );
    // Issued in the future, past the leeway.
    let mut future = good;
    future["iat"] = json!(now + 600);
    assert!(matches!(
        verify(&auth, &sign("rsa-1", &future)).await,
        Err(AuthError::Invalid(_))
    ));
}

#[tokio::test]
async fn a_request_is_served_with_a_jwks_token_and_refused_with_its_mapping_named() {
    let provider = Provider::start(&["rsa-1"], 3600).await;
    let auth = provider.authenticator(&[]).await.unwrap();
    let store = itemgraph::store::embedded::EmbeddedStore::in_memory(
        "jwks",
        itemgraph::chart::builtin().table_schema(),
    )
    .unwrap();
    crate::common::demo::seed_if_absent(&store, false)
        .await
        .unwrap();
    let state = itemgraph::http::AppState::new(
        std::sync::Arc::new(store),
        itemgraph::graphql::CursorCodec::new("jwks test cursor secret"),
    )
    .with_authenticator(Some(auth));
    let server = TestServer::start(state).await;
    let query = json!({ "query": r#"{ organization(slug: "acme") { name } }"# });
    let ok = server
        .post(query.clone())
        .bearer_auth(sign("rsa-1", &cognito("acme", "itemgraph-members")))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let body: serde_json::Value = ok.json().await.unwrap();
    assert_eq!(body["data"]["organization"]["name"], "Acme Corporation");
    // Signed by the provider, but in a group that maps to no role.
    let unmapped = server
        .post(query)
        .bearer_auth(sign("rsa-1", &cognito("acme", "everyone")))
        .send()
        .await
        .unwrap();
    assert_eq!(unmapped.status(), 401);
    let body: serde_json::Value = unmapped.json().await.unwrap();
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`cognito:groups`"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn an_issuer_alone_finds_its_keys_by_openid_discovery() {
    let provider = Provider::start(&["ec-1"], 3600).await;
    let auth = authenticator(&["--jwt-issuer", &provider.issuer])
        .await
        .unwrap();
    // Keys of the discovered set verify that issuer's tokens only.
    assert!(
        verify(&auth, &sign("ec-1", &cognito("acme", "itemgraph-admins")))
            .await
            .is_err()
    );
    let mut claims = cognito("acme", "itemgraph-admins");
    claims["iss"] = provider.issuer.clone().into();
    assert_eq!(
        verify(&auth, &sign("ec-1", &claims)).await,
        Ok(tenant("acme", Role::Admin))
    );
    // The issuer is required too: another one's token is refused.
    claims["iss"] = ISSUER.into();
    assert!(verify(&auth, &sign("ec-1", &claims)).await.is_err());
    // A discovery document of another issuer is not taken.
    let error = authenticator(&["--jwt-issuer", &format!("{}/", provider.issuer)])
        .await
        .unwrap_err();
    assert!(format!("{error:#}").contains("not of"), "{error:#}");
}

/// JWKs of key types and curves this server cannot read: Ed448 and secp256k1, published
/// beside usable keys as providers do.
fn unknown_keys() -> Vec<serde_json::Value> {
    vec![
        json!({ "kty": "OKP", "crv": "Ed448", "kid": "ed448-1", "use": "sig",
                "x": "X9dEm1m0Yf0s54fsYWrUah2hNCSFpw4fig6nXYDpZ3jt8SR2m0bHBhvWeD3x5Q9s0foavq_oJWGA" }),
        json!({ "kty": "EC", "crv": "secp256k1", "kid": "k1-1", "use": "sig",
                "x": "CXRL0XWCTl7D7bUlRIGlbH6WN0tNtk5vrXzVgK0LhMU",
                "y": "ZmJfIJK6gbP1o8aXsLqjT1ePOw-3D76VJgr9vYtrPcY" }),
        json!({ "kty": "NEW-TYPE", "kid": "future-1" }),
    ]
}

/// A key the server cannot read, published beside the RSA keys, is skipped and counted:
/// the start succeeds, and a refresh takes the set's new usable key (rather than keeping
/// the old set for ever).
#[tokio::test]
async fn a_key_this_server_cannot_read_is_skipped_not_the_whole_set() {
    itemgraph::metrics::install();
    let provider = Provider::start(&["rsa-1"], 1).await;
    provider.publish_extra(unknown_keys());
    let auth = provider
        .authenticator(&["--jwks-min-refresh", "1s"])
        .await
        .expect("the start takes the keys it can read");
    let old = sign("rsa-1", &cognito("acme", "itemgraph-admins"));
    assert_eq!(verify(&auth, &old).await, Ok(tenant("acme", Role::Admin)));
    // The provider rotates: the refresh finds the unreadable keys beside the new one.
    provider.publish(&["rsa-1", "rsa-2"]);
    tokio::time::sleep(Duration::from_millis(1050)).await;
    let new = sign("rsa-2", &cognito("globex", "itemgraph-members"));
    assert_eq!(
        verify(&auth, &new).await,
        Ok(tenant("globex", Role::Member))
    );
    let metrics = itemgraph::metrics::render().expect("this process's recorder");
    let skipped = metrics
        .lines()
        .find(|l| l.starts_with("itemgraph_jwks_keys_skipped_total"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(skipped >= 6, "three skipped per fetch: {metrics}");
}

/// Redirects are followed only where a URL could point: `https://`, or `http://` on
/// loopback.
#[tokio::test]
async fn a_redirect_to_plain_http_elsewhere_is_not_followed() {
    let provider = Provider::start(&["rsa-1"], 3600).await;
    let here = format!("{}/moved?to={}", provider.base(), provider.url);
    let source = format!("{ISSUER}={here}");
    let followed = authenticator(&["--jwt-jwks-url", &source]).await;
    assert!(
        followed.is_ok(),
        "a loopback redirect: {:?}",
        followed.err()
    );
    let away = format!(
        "{ISSUER}={}/moved?to=http://jwks.example/.well-known/jwks.json",
        provider.base()
    );
    let error = format!(
        "{:#}",
        authenticator(&["--jwt-jwks-url", &away]).await.unwrap_err()
    );
    assert!(error.contains("only https://"), "{error}");
}

/// A key set is cut off once past its cap as it streams in (a chunked body has no length
/// to refuse up front), not read for as long as the provider sends.
#[tokio::test]
async fn an_endless_key_set_is_cut_off_at_its_cap() {
    let provider = Provider::start(&["rsa-1"], 3600).await;
    let source = format!("{ISSUER}={}/endless.json", provider.base());
    let started = Instant::now();
    let error = format!(
        "{:#}",
        authenticator(&["--jwt-jwks-url", &source])
            .await
            .unwrap_err()
    );
    assert!(error.contains("over 262144 bytes"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

/// An OpenID discovery document past its cap is refused.
#[tokio::test]
async fn an_oversized_discovery_document_is_refused() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let document = json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/keys"),
        "padding": "x".repeat(100 * 1024),
    });
    let app = axum::Router::new().route(
        "/.well-known/openid-configuration",
        axum::routing::get(move || async move { axum::Json(document) }),
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let error = format!(
        "{:#}",
        authenticator(&["--jwt-issuer", &issuer]).await.unwrap_err()
    );
    server.abort();
    assert!(error.contains("over 65536 bytes"), "{error}");
}

/// Two providers trusted at once: each one's keys verify its own tokens only, so a token
/// naming one issuer and signed by the other's key is refused.
#[tokio::test]
async fn a_key_verifies_only_its_own_issuers_tokens() {
    const OTHER: &str = "https://other.example";
    let cognito_keys = Provider::start(&["rsa-1"], 3600).await;
    let other_keys = Provider::start(&["rsa-2"], 3600).await;
    let sources = format!("{ISSUER}={},{OTHER}={}", cognito_keys.url, other_keys.url);
    let auth = authenticator(&["--jwt-jwks-url", &sources]).await.unwrap();
    let ours = sign("rsa-1", &cognito("acme", "itemgraph-admins"));
    assert_eq!(verify(&auth, &ours).await, Ok(tenant("acme", Role::Admin)));
    let mut theirs = cognito("globex", "itemgraph-members");
    theirs["iss"] = OTHER.into();
    assert_eq!(
        verify(&auth, &sign("rsa-2", &theirs)).await,
        Ok(tenant("globex", Role::Member))
    );
    // The other provider's key, under Cognito's issuer: refused.
    let forged = sign("rsa-2", &cognito("acme", "itemgraph-admins"));
    assert!(
        matches!(verify(&auth, &forged).await, Err(AuthError::Invalid(_))),
        "{:?}",
        verify(&auth, &forged).await
    );
}
