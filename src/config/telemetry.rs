//! `serve`'s flags for OpenTelemetry traces. Each reads the variable the OpenTelemetry
//! SDKs read (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*` …), with
//! the specification's defaults, so a deployment configured for any OpenTelemetry SDK
//! configures this one; a value the specification does not allow is refused at start
//! rather than replaced by a default. The exporter itself also reads
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` and their `_TRACES_` forms.

use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, ValueEnum};

use crate::telemetry::{BatchSettings, ParentTrust, SamplerSetting, Settings, WireProtocol};

/// Tracing: where spans go, which are kept, how they are batched.
#[derive(Debug, Clone, Args)]
pub struct TelemetryArgs {
    /// The OTLP collector's base URL (e.g. http://localhost:4318): spans are posted to
    /// `<URL>/v1/traces`. Tracing is off unless this or the traces endpoint is set.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The full URL spans are posted to, taken as it is (overrides `--otlp-endpoint`).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value_name = "URL")]
    pub otlp_traces_endpoint: Option<String>,
    /// The OTLP encoding: `http/protobuf` or `http/json`. (`grpc` is not built in:
    /// collectors take OTLP over HTTP on port 4318.)
    #[arg(
        long,
        env = "OTEL_EXPORTER_OTLP_PROTOCOL",
        default_value = "http/protobuf",
        value_parser = parse_protocol
    )]
    pub otlp_protocol: WireProtocol,
    /// The `service.name` of every span.
    #[arg(long, env = "OTEL_SERVICE_NAME", default_value = "itemgraph")]
    pub otel_service_name: String,
    /// More resource attributes: `key=value` pairs separated by commas, values
    /// percent-encoded where they hold `,` or `=`.
    #[arg(long, env = "OTEL_RESOURCE_ATTRIBUTES", value_name = "K=V,…", value_parser = parse_resource_attributes)]
    pub otel_resource_attributes: Option<ResourceAttributes>,
    /// Which traces are kept: `parentbased_traceidratio` (a trusted caller's sampled trace
    /// is continued, see `--otel-trust-parent`; a new one is kept at the ratio),
    /// `parentbased_always_on`, `parentbased_always_off`, `traceidratio`, `always_on`,
    /// `always_off`.
    #[arg(
        long,
        env = "OTEL_TRACES_SAMPLER",
        value_enum,
        default_value = "parentbased_traceidratio"
    )]
    pub otel_traces_sampler: SamplerKind,
    /// The sampling ratio of the `traceidratio` samplers, from 0 to 1.
    #[arg(long, env = "OTEL_TRACES_SAMPLER_ARG", default_value_t = 1.0, value_parser = parse_ratio)]
    pub otel_traces_sampler_arg: f64,
    /// Spans held waiting for export at most; more are dropped (and counted in
    /// `itemgraph_trace_spans_total{outcome="queue_full"}`). See also
    /// `--otel-bsp-max-queue-bytes`.
    #[arg(long, env = "OTEL_BSP_MAX_QUEUE_SIZE", default_value_t = BatchSettings::DEFAULT.max_queue_size, value_parser = super::at_least_one())]
    pub otel_bsp_max_queue_size: usize,
    /// Longest wait, in milliseconds, from a span's end to its export.
    /// From 0 to 600000 (10 minutes).
    #[arg(
        long,
        env = "OTEL_BSP_SCHEDULE_DELAY",
        value_name = "MS",
        default_value_t = 5000,
        value_parser = clap::value_parser!(u64).range(..=600_000)
    )]
    pub otel_bsp_schedule_delay: u64,
    /// Most spans in one export; at most the queue size.
    #[arg(long, env = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", default_value_t = BatchSettings::DEFAULT.max_export_batch_size, value_parser = super::at_least_one())]
    pub otel_bsp_max_export_batch_size: usize,
    /// Longest one export may take, in milliseconds, before its spans count as lost.
    /// From 1 to 600000 (10 minutes).
    #[arg(long, env = "OTEL_BSP_EXPORT_TIMEOUT", value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub otel_bsp_export_timeout: u64,
    /// Turns tracing off whatever else is set, as every OpenTelemetry SDK does.
    #[arg(long, env = "OTEL_SDK_DISABLED", value_parser = BoolishValueParser::new(), default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub otel_sdk_disabled: bool,
    /// Names the caller's organization on each request span (`itemgraph.organization`).
    /// Off by default: it is tenant data, for the operator to allow.
    #[arg(long, env = "ITEMGRAPH_OTEL_RECORD_ORGANIZATION", value_parser = BoolishValueParser::new(), default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub otel_record_organization: bool,
    /// Whose `traceparent` decides whether a request is traced: `authenticated` (a request
    /// to `/graphql` with a valid bearer token continues its caller's trace; any other
    /// starts a new trace, kept at the sampler's ratio and linked to the caller's), `all`
    /// (every caller's: only for a server that a proxy setting or stripping `traceparent`
    /// fronts; with `--auth off`, what continues callers' traces), `none`.
    #[arg(
        long,
        env = "ITEMGRAPH_OTEL_TRUST_PARENT",
        value_enum,
        default_value = "authenticated"
    )]
    pub otel_trust_parent: ParentTrust,
    /// Bytes of spans (names, attributes, trace state, and an allowance per span) held
    /// waiting for export or being exported at most; past it a span is dropped and counted
    /// (`queue_full`), as past `--otel-bsp-max-queue-size`. At least 65536.
    #[arg(
        long,
        env = "ITEMGRAPH_OTEL_BSP_MAX_QUEUE_BYTES",
        value_name = "BYTES",
        default_value_t = BatchSettings::DEFAULT.max_queue_bytes,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(65_536..)
    )]
    pub otel_bsp_max_queue_bytes: usize,
    /// Longest, in milliseconds, a stop waits for the last spans to reach the collector;
    /// what is not exported by then is dropped (counted as `shutdown`).
    /// From 0 to 60000 (a minute).
    #[arg(
        long,
        env = "ITEMGRAPH_OTEL_SHUTDOWN_TIMEOUT",
        value_name = "MS",
        default_value_t = 5000,
        value_parser = clap::value_parser!(u64).range(..=60_000)
    )]
    pub otel_shutdown_timeout: u64,
}

/// `OTEL_TRACES_SAMPLER`'s values, as the specification spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum SamplerKind {
    AlwaysOn,
    AlwaysOff,
    Traceidratio,
    ParentbasedAlwaysOn,
    ParentbasedAlwaysOff,
    ParentbasedTraceidratio,
}

/// `OTEL_RESOURCE_ATTRIBUTES`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceAttributes(pub Vec<(String, String)>);

impl TelemetryArgs {
    /// The settings, or `None` when tracing is off (no endpoint, or `OTEL_SDK_DISABLED`).
    pub fn settings(&self) -> anyhow::Result<Option<Settings>> {
        let endpoint = match (&self.otlp_traces_endpoint, &self.otlp_endpoint) {
            _ if self.otel_sdk_disabled => return Ok(None),
            (Some(traces), _) if !traces.trim().is_empty() => traces.trim().to_owned(),
            (_, Some(base)) if !base.trim().is_empty() => {
                format!("{}/v1/traces", base.trim().trim_end_matches('/'))
            }
            _ => return Ok(None),
        };
        let uri = endpoint.parse::<axum::http::Uri>().ok();
        if !uri
            .as_ref()
            .is_some_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some())
        {
            anyhow::bail!(
                "the OTLP endpoint `{endpoint}` must be an http:// or https:// URL with a host, \
                 e.g. http://localhost:4318"
            );
        }
        if self.otel_bsp_max_export_batch_size > self.otel_bsp_max_queue_size {
            anyhow::bail!(
                "--otel-bsp-max-export-batch-size ({}) must not exceed --otel-bsp-max-queue-size ({})",
                self.otel_bsp_max_export_batch_size,
                self.otel_bsp_max_queue_size
            );
        }
        let ratio = self.otel_traces_sampler_arg;
        let sampler = match self.otel_traces_sampler {
            SamplerKind::AlwaysOn => SamplerSetting::AlwaysOn,
            SamplerKind::AlwaysOff => SamplerSetting::AlwaysOff,
            SamplerKind::Traceidratio => SamplerSetting::TraceIdRatio(ratio),
            SamplerKind::ParentbasedAlwaysOn => SamplerSetting::ParentBasedAlwaysOn,
            SamplerKind::ParentbasedAlwaysOff => SamplerSetting::ParentBasedAlwaysOff,
            SamplerKind::ParentbasedTraceidratio => SamplerSetting::ParentBasedTraceIdRatio(ratio),
        };
        Ok(Some(Settings {
            traces_endpoint: endpoint,
            protocol: self.otlp_protocol,
            service_name: self.otel_service_name.clone(),
            resource_attributes: self
                .otel_resource_attributes
                .clone()
                .map(|a| a.0)
                .unwrap_or_default(),
            sampler,
            batch: BatchSettings {
                max_queue_size: self.otel_bsp_max_queue_size,
                schedule_delay: Duration::from_millis(self.otel_bsp_schedule_delay),
                max_export_batch_size: self.otel_bsp_max_export_batch_size,
                export_timeout: Duration::from_millis(self.otel_bsp_export_timeout),
                max_queue_bytes: self.otel_bsp_max_queue_bytes,
                shutdown_timeout: Duration::from_millis(self.otel_shutdown_timeout),
            },
            record_organization: self.otel_record_organization,
            parent_trust: self.otel_trust_parent,
        }))
    }
}

fn parse_protocol(s: &str) -> Result<WireProtocol, String> {
    match s.trim() {
        "http/protobuf" => Ok(WireProtocol::HttpProtobuf),
        "http/json" => Ok(WireProtocol::HttpJson),
        "grpc" => Err(
            "OTLP over gRPC is not built in: use `http/protobuf` (the collector's \
                       port 4318) or `http/json`"
                .into(),
        ),
        other => Err(format!(
            "`{}` is not an OTLP protocol: use `http/protobuf` or `http/json`",
            other.escape_debug()
        )),
    }
}

fn parse_ratio(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!(
            "`{}` is not a sampling ratio: write a number from 0 to 1, e.g. 0.01",
            s.escape_debug()
        )),
    }
}

/// `key1=value1,key2=value2`, values percent-decoded (the W3C Baggage format the
/// specification names).
fn parse_resource_attributes(s: &str) -> Result<ResourceAttributes, String> {
    let mut out = Vec::new();
    for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(format!(
                "`{}` is not key=value (resource attributes are key=value pairs separated by commas)",
                pair.escape_debug()
            ));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err(format!("`{}` has no key", pair.escape_debug()));
        }
        out.push((k.to_owned(), percent_decode(v.trim())?));
    }
    Ok(ResourceAttributes(out))
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(b) = hex else {
                return Err(format!("`{}` has a malformed %-escape", s.escape_debug()));
            };
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("`{}` decodes to invalid UTF-8", s.escape_debug()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        t: TelemetryArgs,
    }

    fn parse(args: &[&str]) -> Result<TelemetryArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("itemgraph").chain(args.iter().copied())).map(|c| c.t)
    }

    #[test]
    fn off_without_an_endpoint_and_on_with_one() {
        assert_eq!(parse(&[]).unwrap().settings().unwrap(), None);
        let s = parse(&["--otlp-endpoint", "http://collector:4318/"])
            .unwrap()
            .settings()
            .unwrap()
            .unwrap();
        assert_eq!(s.traces_endpoint, "http://collector:4318/v1/traces");
        assert_eq!(s.protocol, WireProtocol::HttpProtobuf);
        assert_eq!(s.sampler, SamplerSetting::ParentBasedTraceIdRatio(1.0));
        assert_eq!(s.batch, BatchSettings::DEFAULT);
        assert_eq!(s.service_name, "itemgraph");
        assert!(!s.record_organization);
        let s = parse(&[
            "--otlp-endpoint",
            "http://a:4318",
            "--otlp-traces-endpoint",
            "https://b/traces",
        ])
        .unwrap()
        .settings()
        .unwrap()
        .unwrap();
        assert_eq!(s.traces_endpoint, "https://b/traces");
        let off = parse(&["--otlp-endpoint", "http://a:4318", "--otel-sdk-disabled"]).unwrap();
        assert_eq!(off.settings().unwrap(), None);
    }

    #[test]
    fn the_specifications_values_are_read_and_others_refused() {
        let s = parse(&[
            "--otlp-endpoint=http://a:4318",
            "--otlp-protocol=http/json",
            "--otel-traces-sampler=traceidratio",
            "--otel-traces-sampler-arg=0.01",
            "--otel-resource-attributes=deployment.environment=prod, team=a%2Cb",
            "--otel-bsp-max-queue-size=10",
            "--otel-bsp-max-export-batch-size=5",
            "--otel-bsp-schedule-delay=100",
            "--otel-record-organization",
        ])
        .unwrap()
        .settings()
        .unwrap()
        .unwrap();
        assert_eq!(s.protocol, WireProtocol::HttpJson);
        assert_eq!(s.sampler, SamplerSetting::TraceIdRatio(0.01));
        assert_eq!(
            s.resource_attributes,
            vec![
                ("deployment.environment".into(), "prod".into()),
                ("team".into(), "a,b".into())
            ]
        );
        assert_eq!(s.batch.schedule_delay, Duration::from_millis(100));
        assert!(s.record_organization);
        for bad in [
            "--otlp-protocol=grpc",
            "--otlp-protocol=thrift",
            "--otel-traces-sampler-arg=1.5",
            "--otel-traces-sampler=jaeger_remote",
            "--otel-resource-attributes=novalue",
            "--otel-resource-attributes=k=%zz",
            "--otel-bsp-max-queue-size=0",
        ] {
            assert!(parse(&[bad]).is_err(), "{bad}");
        }
        let grpc = parse(&["--otlp-protocol=grpc"]).err().unwrap().to_string();
        assert!(grpc.contains("http/protobuf"), "{grpc}");
        for (bad, says) in [
            (["--otlp-endpoint=collector:4318", ""], "http://"),
            (
                [
                    "--otlp-endpoint=http://a",
                    "--otel-bsp-max-export-batch-size=4096",
                ],
                "must not exceed",
            ),
        ] {
            let args: Vec<&str> = bad.iter().copied().filter(|a| !a.is_empty()).collect();
            let err = parse(&args).unwrap().settings().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn trust_queue_bytes_and_the_stops_deadline_are_read() {
        let s = parse(&["--otlp-endpoint=http://a:4318"])
            .unwrap()
            .settings()
            .unwrap()
            .unwrap();
        assert_eq!(s.parent_trust, ParentTrust::Authenticated);
        assert_eq!(s.batch.max_queue_bytes, 8 * 1024 * 1024);
        assert_eq!(s.batch.shutdown_timeout, Duration::from_secs(5));
        let s = parse(&[
            "--otlp-endpoint=http://a:4318",
            "--otel-trust-parent=all",
            "--otel-bsp-max-queue-bytes=1048576",
            "--otel-shutdown-timeout=250",
        ])
        .unwrap()
        .settings()
        .unwrap()
        .unwrap();
        assert_eq!(s.parent_trust, ParentTrust::All);
        assert_eq!(s.batch.max_queue_bytes, 1 << 20);
        assert_eq!(s.batch.shutdown_timeout, Duration::from_millis(250));
        assert_eq!(
            parse(&["--otel-trust-parent=none"])
                .unwrap()
                .otel_trust_parent,
            ParentTrust::Nobody
        );
        assert_eq!(
            parse(&["--otel-shutdown-timeout=0"])
                .unwrap()
                .otel_shutdown_timeout,
            0
        );
        for bad in [
            "--otel-trust-parent=everyone",
            "--otel-bsp-max-queue-bytes=1000",
            "--otel-shutdown-timeout=60001",
        ] {
            assert!(parse(&[bad]).is_err(), "{bad}");
        }
    }
}
