//! A migration's progress: a bar with items/s and ETA on a terminal (indicatif), a log
//! line every few seconds elsewhere (a deployment's job log has no terminal to redraw).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the log line comes when no bar is drawn.
const LOG_EVERY: Duration = Duration::from_secs(5);

const WITH_TOTAL: &str = "{prefix} [{bar:30}] {human_pos}/~{human_len} items, {per_sec}, ETA {eta}";
const WITHOUT_TOTAL: &str = "{prefix} {human_pos} items, {per_sec}";

/// One migration's progress over the items of its Scan.
pub struct Progress {
    bar: ProgressBar,
    logger: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    /// `total`: the table's item count as DescribeTable gives it (DynamoDB's figure is
    /// refreshed about every six hours, so the ETA is an estimate); `done` items already
    /// migrated by an earlier run. `shown`: draw or log at all (the CLI does; a library
    /// caller, a test, does not).
    pub fn start(name: &str, total: Option<u64>, done: u64, shown: bool) -> Self {
        let target = if shown {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(total, target);
        let template = if total.is_some() {
            WITH_TOTAL
        } else {
            WITHOUT_TOTAL
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(name.to_owned());
        bar.set_position(done);
        bar.reset_eta();
        let logger = (shown && bar.is_hidden()).then(|| {
            let bar = bar.clone();
            let name = name.to_owned();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(LOG_EVERY);
                every.tick().await;
                loop {
                    every.tick().await;
                    tracing::info!(
                        migration = %name,
                        items = bar.position(),
                        of_about = ?bar.length(),
                        items_per_second = format!("{:.0}", bar.per_sec()),
                        eta_seconds = bar.length().map(|_| bar.eta().as_secs()),
                        "migrating"
                    );
                }
            })
        });
        Progress { bar, logger }
    }

    /// `read` more items scanned. The total grows when the table turns out bigger than
    /// DescribeTable said.
    pub fn advance(&self, read: u64) {
        self.bar.inc(read);
        if let Some(len) = self.bar.length() {
            if self.bar.position() > len {
                self.bar.set_length(self.bar.position());
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(logger) = self.logger.take() {
            logger.abort();
        }
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_templates_parse() {
        for template in [WITH_TOTAL, WITHOUT_TOTAL] {
            ProgressStyle::with_template(template).unwrap();
        }
    }

    /// Past DescribeTable's estimate, the total follows the items read.
    #[tokio::test]
    async fn the_total_grows_past_the_estimate() {
        let progress = Progress::start("3 counter-shards", Some(10), 4, false);
        progress.advance(5);
        assert_eq!(
            (progress.bar.position(), progress.bar.length()),
            (9, Some(10))
        );
        progress.advance(5);
        assert_eq!(
            (progress.bar.position(), progress.bar.length()),
            (14, Some(14))
        );
    }
}
