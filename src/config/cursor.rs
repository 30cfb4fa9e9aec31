//! The cursor signing key and its rotation: `--cursor-secret`, and the previous secret
//! accepted until the end of its grace period.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use super::ServeArgs;
use crate::graphql::CursorCodec;

impl ServeArgs {
    /// The cursor codec: from `--cursor-secret`, or from a fresh random 32-byte key, with a
    /// warning, since its cursors work on this process only. With a previous secret, logs
    /// until when its cursors are accepted and, inside a Tokio runtime, logs again when that
    /// grace period ends.
    pub fn cursor_codec(&self) -> CursorCodec {
        let codec = match &self.cursor_secret {
            Some(secret) => CursorCodec::new(secret.0.expose_secret().as_bytes()),
            None => {
                tracing::warn!(
                    "no --cursor-secret (ITEMGRAPH_CURSOR_SECRET): signing cursors with a random \
                     key; they will not survive a restart or work across replicas"
                );
                CursorCodec::new(rand::random::<[u8; 32]>())
            }
        };
        let (Some(previous), Some(until)) = (
            &self.cursor_secret_previous,
            &self.cursor_secret_previous_until,
        ) else {
            return codec;
        };
        let codec = codec.with_previous(previous.0.expose_secret().as_bytes(), until.instant());
        match until.instant().duration_since(std::time::SystemTime::now()) {
            Ok(left) => {
                tracing::info!(
                    %until,
                    "accepting cursors signed with the previous cursor secret until then"
                );
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let until = until.clone();
                    runtime.spawn(async move {
                        tokio::time::sleep(left).await;
                        tracing::info!(
                            %until,
                            "the previous cursor secret's grace period ended: its cursors are \
                             refused from now on; drop --cursor-secret-previous and \
                             --cursor-secret-previous-until"
                        );
                    });
                }
            }
            Err(_) => tracing::warn!(
                %until,
                "the previous cursor secret's grace period is over: its cursors are refused; \
                 drop --cursor-secret-previous and --cursor-secret-previous-until"
            ),
        }
        codec
    }
}

/// The end of a previous cursor secret's grace period, from an RFC 3339 instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraceEnd(time::OffsetDateTime);

/// How long after its end a grace period may still be configured. A replica restarting
/// shortly after the rotation ended starts (and refuses the old cursors); a day later the
/// leftover flags are refused, so they do not linger in the configuration, and a mistyped
/// instant (last year's) fails the deployment instead of silently accepting nothing.
pub const GRACE_END_TOLERANCE: Duration = Duration::from_secs(24 * 3600);

impl GraceEnd {
    pub fn instant(&self) -> std::time::SystemTime {
        self.0.into()
    }
}

impl std::fmt::Display for GraceEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self
            .0
            .format(&time::format_description::well_known::Rfc3339)
        {
            Ok(text) => f.write_str(&text),
            Err(_) => write!(f, "{:?}", self.0),
        }
    }
}

impl std::str::FromStr for GraceEnd {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let instant =
            time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339)
                .map_err(|e| {
                format!("not an RFC 3339 instant ({e}); write e.g. 2026-06-01T12:00:00Z")
            })?;
        let end = GraceEnd(instant);
        let past = std::time::SystemTime::now()
            .duration_since(end.instant())
            .unwrap_or_default();
        if past > GRACE_END_TOLERANCE {
            return Err(format!(
                "{end} is more than a day ago: the previous secret's grace period is long over; \
                 drop --cursor-secret-previous and --cursor-secret-previous-until"
            ));
        }
        Ok(end)
    }
}

/// The cursor signing key. Its `Debug` never shows it, so the parsed command line can be
/// logged; it is zeroed when dropped.
#[derive(Clone)]
pub struct CursorSecret(SecretString);

impl std::fmt::Debug for CursorSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSecret(..)")
    }
}

impl PartialEq for CursorSecret {
    fn eq(&self, other: &Self) -> bool {
        self.0.expose_secret() == other.0.expose_secret()
    }
}

impl Eq for CursorSecret {}

impl std::str::FromStr for CursorSecret {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() < MIN_CURSOR_SECRET_LEN {
            return Err(format!(
                "the cursor secret must be at least {MIN_CURSOR_SECRET_LEN} bytes, e.g. \
                 `openssl rand -hex 32`"
            ));
        }
        Ok(CursorSecret(SecretString::from(s)))
    }
}

/// Shortest cursor secret accepted: 128 bits as hex, so a guessable key is refused.
pub const MIN_CURSOR_SECRET_LEN: usize = 32;
