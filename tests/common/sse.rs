//! Reading a `text/event-stream` answer (GraphQL over Server-Sent Events) in tests.

use std::time::Duration;

use serde_json::Value;

/// Reads `resp` (what is read but not used yet kept in `buf`) until an event `next` whose
/// JSON data satisfies `want`, and returns that data. Each chunk must come within 60 s.
pub async fn next_event(
    resp: &mut reqwest::Response,
    buf: &mut String,
    want: impl Fn(&Value) -> bool,
) -> Value {
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut event = "";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    event = e.trim();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            if event == "next" {
                let v: Value = serde_json::from_str(&data).expect("JSON data");
                if want(&v) {
                    return v;
                }
            }
        }
        let chunk = tokio::time::timeout(Duration::from_secs(60), resp.chunk())
            .await
            .expect("an event within 60 s")
            .expect("the stream reads")
            .expect("the stream goes on");
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
}
