//! The `itemgraph` binary: parse the command line, open the store, run the subcommand.

use std::io::Write as _;

use anyhow::Context;
use clap::Parser;
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

use itemgraph::config::{Cli, Command, SeedMode};
use itemgraph::{demo, graphql, http};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command = Cli::parse().into_command();
    if let Command::Schema = command {
        // Before logging starts: stdout carries the SDL and nothing else.
        return print_schema();
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();

    match command {
        Command::Serve(args) => {
            let cursors = args.cursor_codec();
            let store = args.store.open().await?;
            tracing::info!(store = %args.store.describe(), "store opened");
            if args.seed == SeedMode::Demo {
                match demo::seed_if_absent(store.as_ref())
                    .await
                    .context("seeding the demo data")?
                {
                    Some(report) => tracing::info!(%report, "demo data loaded"),
                    None => tracing::info!("demo data already present"),
                }
            }
            let listener = TcpListener::bind(args.listen)
                .await
                .with_context(|| format!("binding {}", args.listen))?;
            tracing::info!(addr = %listener.local_addr()?, "listening");
            let state = http::AppState::new(store, cursors);
            http::serve(listener, state, shutdown_signal()).await?;
            tracing::info!("stopped");
        }
        Command::CreateTable(args) => {
            let store = args.open().await?;
            let created = store.create_table().await.context("creating the table")?;
            tracing::info!(store = %args.describe(), created, "table ready");
        }
        Command::Seed(args) => {
            let store = args.store.open().await?;
            let store = store.as_ref();
            let report = if args.force {
                store.create_table().await.context("creating the table")?;
                demo::seed_demo(store).await.map(Some)
            } else {
                demo::seed_if_absent(store).await
            };
            match report.context("seeding the demo data")? {
                Some(report) => {
                    tracing::info!(store = %args.store.describe(), %report, "demo data loaded")
                }
                None => tracing::info!(
                    store = %args.store.describe(),
                    "demo data already present; --force rewrites it"
                ),
            }
        }
        Command::Schema => unreachable!("handled before logging starts"),
    }
    Ok(())
}

/// `itemgraph schema`: the SDL, byte for byte what `schema.graphql` holds. A closed pipe
/// (`itemgraph schema | head`) is not an error.
fn print_schema() -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out
        .write_all(graphql::sdl().as_bytes())
        .and_then(|()| out.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("writing the schema to stdout")
        }
        _ => Ok(()),
    }
}

/// Completes on Ctrl-C or SIGTERM, whichever comes first.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
    tracing::info!("shutdown requested; finishing in-flight requests");
}
