//! `serve`'s flags for live updates: subscriptions, the change stream, and what a
//! WebSocket or an event stream may hold.

use std::time::Duration;

use clap::Args;

use super::at_least_one;
use crate::live::LiveOptions;

/// Subscriptions: how many, how far behind, how the change stream is read.
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Most subscriptions open at once in this process, over every transport; one more
    /// is refused with `TOO_MANY_SUBSCRIPTIONS`.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_SUBSCRIPTIONS",
        default_value_t = LiveOptions::DEFAULT.max_subscriptions,
        value_parser = at_least_one()
    )]
    pub max_subscriptions: usize,
    /// Most subscriptions open at once on one WebSocket.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_SUBSCRIPTIONS_PER_CONNECTION",
        default_value_t = LiveOptions::DEFAULT.max_per_connection,
        value_parser = at_least_one()
    )]
    pub max_subscriptions_per_connection: usize,
    /// Most subscriptions open at once for one organization in this process, over every
    /// transport (with auth off: per `org` argument); one more is refused with
    /// `TOO_MANY_SUBSCRIPTIONS`, so one tenant cannot take every slot.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_SUBSCRIPTIONS_PER_ORG",
        default_value_t = LiveOptions::DEFAULT.max_per_org,
        value_parser = at_least_one()
    )]
    pub max_subscriptions_per_org: usize,
    /// Changes a subscriber may fall behind by; further behind, it is ended with
    /// `SUBSCRIBER_TOO_SLOW` (and resumes with its last event's cursor).
    #[arg(
        long,
        env = "ITEMGRAPH_SUBSCRIBER_BUFFER",
        value_name = "CHANGES",
        default_value_t = LiveOptions::DEFAULT.buffer,
        value_parser = at_least_one()
    )]
    pub subscriber_buffer: usize,
    /// Most stream records a subscription resumed with `after` reads to catch up;
    /// further behind, it gets `EVENTS_EXPIRED`.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_REPLAY",
        value_name = "RECORDS",
        default_value_t = LiveOptions::DEFAULT.max_replay,
        value_parser = at_least_one()
    )]
    pub max_replay: usize,
    /// Resumed subscriptions (`after`) of one organization catching up at once in this
    /// process; one more is refused with `TOO_MANY_REPLAYS` (retryable), so one tenant's
    /// reconnect storm leaves the others' events on time.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_REPLAYS_PER_ORG",
        default_value_t = LiveOptions::DEFAULT.max_replays_per_org,
        value_parser = at_least_one()
    )]
    pub max_replays_per_org: usize,
    /// How often DynamoDB Streams is asked for new records when the last call brought
    /// none, per shard. DynamoDB serves at most 5 such calls per second per shard to all
    /// its readers together.
    /// From 10 to 60000 (a minute).
    #[arg(
        long,
        env = "ITEMGRAPH_STREAM_POLL_MS",
        value_name = "MS",
        default_value_t = LiveOptions::DEFAULT.poll.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(10..=60_000)
    )]
    pub stream_poll_ms: u64,
    /// How long a WebSocket has to send `connection_init` before it is closed (4408).
    /// From 1 to 600000 (10 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_WS_INIT_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = LiveOptions::DEFAULT.init_timeout.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=600_000)
    )]
    pub ws_init_timeout_ms: u64,
    /// How often an idle WebSocket is pinged and an event stream sent a comment; a
    /// WebSocket silent for three of these is closed.
    /// From 100 to 600000 (10 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_KEEPALIVE_MS",
        value_name = "MS",
        default_value_t = LiveOptions::DEFAULT.keepalive.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(100..=600_000)
    )]
    pub keepalive_ms: u64,
    /// Longest a write to a WebSocket or an event stream may wait for the client to read,
    /// in milliseconds; past it the client is taken not to read and is disconnected.
    /// From 1 to 600000 (10 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_SEND_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = LiveOptions::DEFAULT.send_timeout.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=600_000)
    )]
    pub send_timeout_ms: u64,
    /// Bytes of messages a WebSocket may have waiting for its client; at it, the server
    /// stops reading the socket and running its operations until the client reads.
    #[arg(
        long,
        env = "ITEMGRAPH_SEND_QUEUE_BYTES",
        value_name = "BYTES",
        default_value_t = LiveOptions::DEFAULT.send_queue_bytes,
        value_parser = at_least_one()
    )]
    pub send_queue_bytes: usize,
    /// Largest WebSocket message in bytes (a `subscribe` with its document and
    /// variables); a larger one closes the socket with 1009. Apart from
    /// `--max-body-bytes`, since a socket keeps what it is sent for longer.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_SOCKET_MESSAGE_BYTES",
        value_name = "BYTES",
        default_value_t = LiveOptions::DEFAULT.max_message_bytes,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..)
    )]
    pub max_socket_message_bytes: usize,
    /// WebSockets upgraded and not yet through `connection_init` at once; one more
    /// closes the one waiting longest (1013). (Such sockets are also the first closed when
    /// `--max-connections` is reached.)
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_SOCKETS_AWAITING_INIT",
        default_value_t = LiveOptions::DEFAULT.max_awaiting_init,
        value_parser = at_least_one()
    )]
    pub max_sockets_awaiting_init: usize,
    /// The relay of the change stream, for more than one replica: a Redis or Valkey URL
    /// (`redis://host:port`, `rediss://` for TLS, as ElastiCache's in-transit encryption
    /// asks). One replica at a
    /// time, elected by a lease item in the table (`LEASE#stream-relay`), reads the stream
    /// into a Redis Stream; every replica's subscriptions follow that, and resumes are
    /// served from its history. Without it each replica reads the stream itself, which
    /// DynamoDB Streams allows for two at most.
    #[arg(
        long,
        env = "ITEMGRAPH_RELAY_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub relay_url: Option<String>,
    /// With a `rediss://` relay: a PEM file of the certificates to trust instead of the
    /// system's roots (a private CA).
    #[arg(long, env = "ITEMGRAPH_RELAY_CA_FILE", value_name = "PATH")]
    pub relay_ca_file: Option<std::path::PathBuf>,
    /// With `--relay-url`: the name the relay's Redis keys carry (`itemgraph:{<name>}:changes`,
    /// `…:fence`). By default the table's ARN, so deployments of other accounts or regions
    /// sharing one Redis stay apart (the table's name when it has no ARN: the embedded
    /// engine). Set it to the table's name to keep the keys of a version before this flag
    /// through an upgrade, or to keep apart deployments whose ARNs are alike (DynamoDB
    /// Local).
    #[arg(
        long,
        env = "ITEMGRAPH_RELAY_PREFIX",
        value_name = "NAME",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub relay_prefix: Option<String>,
    /// How long the relay's holder has between heartbeats before another replica takes
    /// over, in milliseconds (it heartbeats three times a lease).
    /// From 300 to 600000 (10 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_RELAY_LEASE_MS",
        value_name = "MS",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(300..=600_000)
    )]
    pub relay_lease_ms: u64,
    /// Most entries the relay's history keeps (trimmed approximately): how far back a
    /// resume can go, with `--relay-retention-ms`.
    #[arg(
        long,
        env = "ITEMGRAPH_RELAY_HISTORY",
        default_value_t = 100_000,
        value_parser = at_least_one()
    )]
    pub relay_history: usize,
    /// With `--relay-url`: the relay's latest entries each replica keeps in memory (about
    /// 1 KB each), so a resume from a recent position, such as a reconnect storm after a
    /// deploy, reads nothing at all.
    #[arg(
        long,
        env = "ITEMGRAPH_RELAY_MEMORY",
        default_value_t = LiveOptions::DEFAULT.relay_memory
    )]
    pub relay_memory: usize,
    /// Oldest entry the relay's history keeps, in milliseconds.
    /// From 1000 to 604800000 (7 days).
    #[arg(
        long,
        env = "ITEMGRAPH_RELAY_RETENTION_MS",
        value_name = "MS",
        default_value_t = 3_600_000,
        value_parser = clap::value_parser!(u64).range(1000..=604_800_000)
    )]
    pub relay_retention_ms: u64,
}

impl LiveArgs {
    /// Connects to the relay, when one is configured, its keys named by `--relay-prefix`,
    /// or else the table's ARN (`arn`), or else the table's name.
    pub async fn relay(
        &self,
        table: &str,
        arn: Option<&str>,
    ) -> anyhow::Result<Option<crate::live::relay::RelayLog>> {
        let Some(url) = &self.relay_url else {
            return Ok(None);
        };
        let ca = match &self.relay_ca_file {
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|e| anyhow::anyhow!("--relay-ca-file {}: {e}", path.display()))?,
            ),
            None => None,
        };
        let log = crate::live::relay::RelayLog::connect_trusting(
            url,
            ca.as_deref(),
            self.relay_prefix.as_deref().or(arn).unwrap_or(table),
            self.relay_history,
            Duration::from_millis(self.relay_retention_ms),
        )
        .await
        .map_err(|e| anyhow::anyhow!("--relay-url: {e}"))?;
        Ok(Some(log))
    }

    pub fn relay_lease(&self) -> Duration {
        Duration::from_millis(self.relay_lease_ms)
    }
}

impl LiveArgs {
    pub fn options(&self) -> LiveOptions {
        LiveOptions {
            buffer: self.subscriber_buffer,
            poll: Duration::from_millis(self.stream_poll_ms),
            max_subscriptions: self.max_subscriptions,
            max_per_connection: self.max_subscriptions_per_connection,
            max_per_org: self.max_subscriptions_per_org,
            send_timeout: Duration::from_millis(self.send_timeout_ms),
            send_queue_bytes: self.send_queue_bytes,
            max_message_bytes: self.max_socket_message_bytes,
            max_awaiting_init: self.max_sockets_awaiting_init,
            max_replay: self.max_replay,
            max_replays_per_org: self.max_replays_per_org,
            relay_memory: self.relay_memory,
            init_timeout: Duration::from_millis(self.ws_init_timeout_ms),
            keepalive: Duration::from_millis(self.keepalive_ms),
        }
    }
}
