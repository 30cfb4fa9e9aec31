//! What the Lambda crate's test files share: DynamoDB Local (the root package's harness),
//! the secrets they configure the function with, and a token signed with one of them.

#[allow(dead_code)]
#[path = "../../../tests/common/dynamo_local.rs"]
pub mod dynamo_local;

#[allow(dead_code)]
#[path = "../../../tests/common/otlp.rs"]
pub mod otlp;

use clap::Parser;

use itemgraph::config::TokenArgs;

pub const JWT_SECRET: &str = "a-jwt-secret-of-at-least-thirty-two-bytes";
pub const CURSOR_SECRET: &str = "a-cursor-secret-of-at-least-thirty-two-bytes";

/// A token of `org` with `role`, signed with [`JWT_SECRET`], as `itemgraph token` makes it.
pub fn token(org: &str, role: &str) -> String {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        token: TokenArgs,
    }
    Cli::parse_from([
        "token",
        "--jwt-secret",
        JWT_SECRET,
        "--org",
        org,
        "--role",
        role,
    ])
    .token
    .token()
    .expect("a token")
}
