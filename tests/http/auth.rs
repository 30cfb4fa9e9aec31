//! Authentication over real HTTP: with auth on, every GraphQL request needs a valid bearer
//! token (HS256, RS256 or ES256), is refused `401 UNAUTHENTICATED` otherwise before
//! anything is parsed or read, and sees only its own organization.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::server::{read, TestServer};
use itemgraph::auth::{expiring_in, issue_token, Authenticator, Claims, Role};
use itemgraph::graphql::CursorCodec;
use itemgraph::http::AppState;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use serde_json::{json, Value};

const SECRET: &str = "auth-tests-secret-auth-tests-secret";

async fn start(authenticator: Authenticator) -> TestServer {
    let store = common::engines::embedded_demo().await;
    let state = AppState::new(Arc::new(store), CursorCodec::new("auth test cursor secret"))
        .with_authenticator(Some(authenticator));
    TestServer::start(state).await
}

fn claims(org: &str, role: Role) -> Claims {
    Claims {
        sub: Some("tester".into()),
        org: org.into(),
        role,
        exp: expiring_in(Duration::from_secs(300)),
        iat: None,
        iss: None,
        aud: None,
    }
}

fn hs256(org: &str, role: Role) -> String {
    issue_token(SECRET.as_bytes(), &claims(org, role)).unwrap()
}

const ACME: &str = r#"{ organization(slug: "acme") { name } }"#;

fn code(body: &Value) -> &str {
    body["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or("")
}

#[tokio::test]
async fn requests_without_a_valid_token_get_401_and_nothing_else() {
    let server = start(Authenticator::hs256(SECRET.as_bytes())).await;
    let expired = issue_token(
        SECRET.as_bytes(),
        &Claims {
            exp: 1_000,
            ..claims("acme", Role::Admin)
        },
    )
    .unwrap();
    let forged = issue_token(
        b"not-the-server-secret-not-the-server-secret",
        &claims("acme", Role::Admin),
    )
    .unwrap();
    let cases: [(Option<String>, &str); 5] = [
        (None, "Bearer"),
        (Some("Basic dXNlcjpwYXNz".into()), "Bearer"),
        (
            Some(format!("Bearer {expired}")),
            r#"Bearer error="invalid_token""#,
        ),
        (
            Some(format!("Bearer {forged}")),
            r#"Bearer error="invalid_token""#,
        ),
        (
            Some("Bearer not.a.token".into()),
            r#"Bearer error="invalid_token""#,
        ),
    ];
    for (authorization, challenge) in cases {
        // The body is not even JSON: authentication is checked first, and says nothing.
        let mut request = server
            .client
            .post(server.url("/graphql"))
            .header("content-type", "application/json")
            .body("{ not json");
        if let Some(a) = &authorization {
            request = request.header(AUTHORIZATION, a);
        }
        let resp = request.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 401, "{authorization:?}");
        assert_eq!(
            resp.headers()
                .get(WWW_AUTHENTICATE)
                .map(|v| v.to_str().unwrap()),
            Some(challenge),
            "{authorization:?}"
        );
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            code(&body),
            "UNAUTHENTICATED",
            "{authorization:?}: {body:#}"
        );
        assert!(body.get("data").is_none(), "{body:#}");
    }
    // GET /graphql too.
    let (status, _, body) = read(
        server
            .client
            .get(server.url("/graphql"))
            .query(&[("query", ACME)]),
    )
    .await;
    assert_eq!((status, code(&body)), (401, "UNAUTHENTICATED"));
    // The playground page itself needs no token (its requests do), nor do the probes.
    let (status, _, _) = read(
        server
            .client
            .get(server.url("/"))
            .header("accept", "text/html"),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _, _) = read(server.client.get(server.url("/healthz"))).await;
    assert_eq!(status, 200);
    server.stop().await;
}

#[tokio::test]
async fn a_token_sees_its_own_organization_only() {
    let server = start(Authenticator::hs256(SECRET.as_bytes())).await;
    for (org, expected) in [
        (
            "acme",
            json!({ "organization": { "name": "Acme Corporation" } }),
        ),
        ("globex", json!({ "organization": null })),
    ] {
        let (status, _, body) = read(
            server
                .post(json!({ "query": ACME }))
                .bearer_auth(hs256(org, Role::Member)),
        )
        .await;
        assert_eq!(status, 200, "{body:#}");
        assert_eq!(body, json!({ "data": expected }), "as {org}");
    }
    // GET carries the token the same way.
    let (status, _, body) = read(
        server
            .client
            .get(server.url("/graphql"))
            .query(&[("query", ACME)])
            .bearer_auth(hs256("acme", Role::Member)),
    )
    .await;
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["data"]["organization"]["name"], "Acme Corporation");
    // A member is refused what only admins may do.
    let (_, _, body) = read(
        server
            .post(json!({
                "query": "mutation { deleteUser(input: {org: \"acme\", username: \"road-runner\"}) { deletedUserId } }"
            }))
            .bearer_auth(hs256("acme", Role::Member)),
    )
    .await;
    assert_eq!(code(&body), "FORBIDDEN", "{body:#}");
    server.stop().await;
}

/// RS256 and ES256 tokens checked against a PEM public key; a token of the other
/// algorithm, or HS256 signed with the public key's bytes (the classic confusion), is
/// refused.
#[tokio::test]
async fn public_key_tokens_rs256_and_es256() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let read_pem = |name: &str| std::fs::read(format!("{fixtures}/{name}")).unwrap();
    let cases = [
        (
            "jwt-rs256-public.pem",
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(&read_pem("jwt-rs256-private.pem")).unwrap(),
        ),
        (
            "jwt-es256-public.pem",
            Algorithm::ES256,
            EncodingKey::from_ec_pem(&read_pem("jwt-es256-private.pem")).unwrap(),
        ),
    ];
    for (public, algorithm, private) in cases {
        let public_pem = read_pem(public);
        let server = start(Authenticator::public_key_pem(&public_pem).unwrap()).await;
        let good = jsonwebtoken::encode(
            &Header::new(algorithm),
            &claims("acme", Role::Admin),
            &private,
        )
        .unwrap();
        let (status, _, body) =
            read(server.post(json!({ "query": ACME })).bearer_auth(&good)).await;
        assert_eq!(status, 200, "{public}: {body:#}");
        assert_eq!(body["data"]["organization"]["name"], "Acme Corporation");

        let confused = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims("acme", Role::Admin),
            &EncodingKey::from_secret(&public_pem),
        )
        .unwrap();
        let (status, _, body) =
            read(server.post(json!({ "query": ACME })).bearer_auth(&confused)).await;
        assert_eq!((status, code(&body)), (401, "UNAUTHENTICATED"), "{public}");
        server.stop().await;
    }
    assert!(Authenticator::public_key_pem(b"not a key").is_err());
}
