//! The `itemgraph-lambda` function: `bootstrap` in the artifact `cargo lambda build`
//! makes. Everything is built in the init phase, before the first event is taken.

use std::time::Instant;

use anyhow::Context;

use itemgraph_lambda::{handler, router, secrets, Settings};

fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    // One thread: an instance answers one invocation at a time, and its store calls wait
    // on the network together.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?
        .block_on(run(started))
}

async fn run(started: Instant) -> anyhow::Result<()> {
    // Lambda's log format and level (`AWS_LAMBDA_LOG_FORMAT`, `AWS_LAMBDA_LOG_LEVEL`, or
    // `RUST_LOG`), into CloudWatch.
    lambda_http::tracing::init_default_subscriber();
    let by_reference = secrets::resolve(|var| std::env::var(var).ok()).await?;
    let settings = Settings::parse(std::env::args_os().skip(1).chain(by_reference))?;
    let app = router(&settings).await?;
    tracing::info!(
        init_ms = %format_args!("{:.1}", started.elapsed().as_secs_f64() * 1e3),
        store = %settings.serve.store.describe(),
        "initialized"
    );
    lambda_http::run(handler(app))
        .await
        .map_err(|e| anyhow::anyhow!("the Lambda runtime stopped: {e}"))
}
