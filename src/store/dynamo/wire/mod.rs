//! A read's items straight from DynamoDB's response body into the port's items.
//!
//! Profiled under the benchmark's full mix (docs/BENCHMARKS.md, issue 45), the SDK's parse
//! of a read's items into its own `AttributeValue` maps, and the engine's conversion of
//! those into the port's, were the largest part of a DynamoDB call's CPU after the SDK's
//! orchestrator: every item's map built twice, every value moved twice. The HTTP client the
//! engine's SDK client sends through ([`ItemsTap`], around the SDK's own default client)
//! reads the items of the responses the engine asks it to ([`tapped`]) straight into port
//! items, and gives the SDK the rest of the body (the consumed capacity, the
//! `LastEvaluatedKey`, the unprocessed keys) to parse as before. Everything else passes
//! through untouched: an error response, a body it cannot read (the SDK then parses it and
//! says what is wrong, or meets a type it does not know), any call outside [`tapped`] (the
//! streams client's, the table's administration, the contract tests' raw requests).
//!
//! DynamoDB's JSON for values (`{"S": "…"}`, `{"M": {…}}` …) is read by [`Wire`] with
//! serde: no maintained crate reads it into `serde_dynamo`'s values (the SDK's own parser
//! is the copy this removes).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::{
    RuntimeComponents, RuntimeComponentsBuilder,
};
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::ConfigBag;
use base64::Engine as _;
use http_body_util::BodyExt;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::store::{AttributeValue, Item};

/// The member of a read's response that holds its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Member {
    /// `Items`: a Query's or a Scan's page.
    Items,
    /// `Item`: GetItem's item, absent when there is none.
    Item,
    /// `Responses`: BatchGetItem's items, by table.
    Responses,
}

impl Member {
    fn name(self) -> &'static str {
        match self {
            Member::Items => "Items",
            Member::Item => "Item",
            Member::Responses => "Responses",
        }
    }
}

/// The items read out of a response, by [`Member`].
#[derive(Debug, PartialEq)]
pub(super) enum Tapped {
    Items(Vec<Item>),
    Item(Option<Item>),
    Responses(HashMap<String, Vec<Item>>),
}

#[derive(Debug)]
struct Tap {
    member: Member,
    tapped: Option<Tapped>,
}

tokio::task_local! {
    static TAP: RefCell<Tap>;
}

/// Runs one SDK call whose response's `member` [`ItemsTap`] reads: the call's output, and
/// the items when the tap read them (`None`: the SDK's output holds them, as when the
/// client has no tap or the body was passed through).
pub(super) async fn tapped<F: Future>(member: Member, call: F) -> (F::Output, Option<Tapped>) {
    let tap = RefCell::new(Tap {
        member,
        tapped: None,
    });
    TAP.scope(tap, async {
        let output = call.await;
        (output, TAP.with(|t| t.borrow_mut().tapped.take()))
    })
    .await
}

/// The SDK's default HTTP client as `aws-smithy-runtime` builds it for this behavior version
/// (hyper 1 over rustls with aws-lc, the proxy from the environment), for a client
/// configured without one of its own: the SDK gives no way to take its default and wrap it.
pub(super) fn default_http_client() -> SharedHttpClient {
    use aws_smithy_http_client::proxy::ProxyConfig;
    use aws_smithy_http_client::{tls, Builder, ConnectorBuilder};
    Builder::new().build_with_connector_fn(|settings, components| {
        let mut connector = ConnectorBuilder::default().tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::AwsLc,
        ));
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.set_proxy_config(Some(ProxyConfig::from_env()));
        connector.build()
    })
}

/// The HTTP client of the engine's SDK client: `inner` (the SDK's default), with each
/// connector it makes wrapped in the tap.
#[derive(Debug, Clone)]
pub(super) struct ItemsTap {
    inner: SharedHttpClient,
}

impl ItemsTap {
    pub(super) fn new(inner: SharedHttpClient) -> Self {
        ItemsTap { inner }
    }
}

impl HttpClient for ItemsTap {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(TapConnector(
            self.inner.http_connector(settings, components),
        ))
    }

    fn validate_base_client_config(
        &self,
        components: &RuntimeComponentsBuilder,
        cfg: &ConfigBag,
    ) -> Result<(), BoxError> {
        self.inner.validate_base_client_config(components, cfg)
    }

    fn validate_final_config(
        &self,
        components: &RuntimeComponents,
        cfg: &ConfigBag,
    ) -> Result<(), BoxError> {
        self.inner.validate_final_config(components, cfg)
    }

    fn connector_metadata(
        &self,
    ) -> Option<aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata> {
        self.inner.connector_metadata()
    }
}

#[derive(Debug)]
struct TapConnector(SharedHttpConnector);

impl HttpConnector for TapConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        // Outside a tapped call, or when a tap inside this one already read the items.
        let Ok(Some(member)) = TAP.try_with(|t| {
            Some(t.borrow())
                .filter(|t| t.tapped.is_none())
                .map(|t| t.member)
        }) else {
            return self.0.call(request);
        };
        let sent = self.0.call(request);
        HttpConnectorFuture::new(async move {
            let mut response = sent.await?;
            if response.status().as_u16() == 200 {
                let body = std::mem::replace(response.body_mut(), SdkBody::taken());
                let bytes = body.collect().await.map_err(ConnectorError::io)?.to_bytes();
                let body = match split(member, &bytes) {
                    Some((items, rest)) => {
                        let handed = TAP.try_with(|t| t.borrow_mut().tapped = Some(items));
                        match handed {
                            Ok(()) => {
                                // The body the SDK reads is no longer DynamoDB's: its length
                                // and checksum headers went with it.
                                let headers = response.headers_mut();
                                headers.remove("content-length");
                                headers.remove("x-amz-crc32");
                                rest.into()
                            }
                            Err(_) => bytes,
                        }
                    }
                    None => bytes,
                };
                *response.body_mut() = SdkBody::from(body);
            }
            Ok(response)
        })
    }
}

/// `body`'s `member` read into port items, and the body without it; `None` when the body is
/// not a JSON object whose `member` is read as DynamoDB writes it.
fn split(member: Member, body: &[u8]) -> Option<(Tapped, Vec<u8>)> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let (tapped, rest) = Split { member }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    let tapped = match (member, tapped) {
        (_, Some(t)) => t,
        (Member::Items, None) => Tapped::Items(Vec::new()),
        (Member::Item, None) => Tapped::Item(None),
        (Member::Responses, None) => Tapped::Responses(HashMap::new()),
    };
    let mut out = Vec::with_capacity(body.len().min(4096));
    out.push(b'{');
    for (i, (name, raw)) in rest.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, name).ok()?;
        out.push(b':');
        out.extend_from_slice(raw.get().as_bytes());
    }
    out.push(b'}');
    Some((tapped, out))
}

/// The response object: `member` read, every other member kept as its text.
struct Split {
    member: Member,
}

type Rest<'de> = Vec<(Cow<'de, str>, &'de RawValue)>;

impl<'de> DeserializeSeed<'de> for Split {
    type Value = (Option<Tapped>, Rest<'de>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Split {
    type Value = (Option<Tapped>, Rest<'de>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a DynamoDB response object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut tapped = None;
        let mut rest = Vec::new();
        while let Some(name) = map.next_key::<Cow<'de, str>>()? {
            if name != self.member.name() {
                rest.push((name, map.next_value::<&RawValue>()?));
                continue;
            }
            if tapped.is_some() {
                return Err(de::Error::custom(format_args!("{name} twice")));
            }
            tapped = Some(match self.member {
                Member::Items => Tapped::Items(map.next_value::<Items>()?.0),
                Member::Item => Tapped::Item(Some(map.next_value::<WireItem>()?.0)),
                Member::Responses => Tapped::Responses(
                    map.next_value::<HashMap<String, Items>>()?
                        .into_iter()
                        .map(|(table, items)| (table, items.0))
                        .collect(),
                ),
            });
        }
        Ok((tapped, rest))
    }
}

/// A list of items.
struct Items(Vec<Item>);

impl<'de> Deserialize<'de> for Items {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Items(
            Vec::<WireItem>::deserialize(d)?
                .into_iter()
                .map(|i| i.0)
                .collect(),
        ))
    }
}

/// One item (or a map value's members): attribute names to [`Wire`] values.
struct WireItem(Item);

impl<'de> Deserialize<'de> for WireItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ItemVisitor).map(WireItem)
    }
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Item;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a DynamoDB item")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
        let mut item = Item::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(name) = map.next_key::<String>()? {
            let Wire(value) = map.next_value()?;
            if let Some(name) = item.insert(name, value).map(|_| "an attribute") {
                return Err(de::Error::custom(format_args!("{name} twice")));
            }
        }
        Ok(item)
    }
}

/// One attribute value in DynamoDB's JSON: an object of one member naming its type.
struct Wire(AttributeValue);

/// The type names DynamoDB writes; any other is refused, so a body with a type newer than
/// this code is passed to the SDK, which names it.
#[derive(Deserialize)]
#[allow(clippy::upper_case_acronyms)]
enum Type {
    S,
    N,
    B,
    BOOL,
    NULL,
    M,
    L,
    SS,
    NS,
    BS,
}

impl<'de> Deserialize<'de> for Wire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(WireVisitor)
    }
}

struct WireVisitor;

impl<'de> Visitor<'de> for WireVisitor {
    type Value = Wire;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a DynamoDB attribute value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Wire, A::Error> {
        let Some(kind) = map.next_key::<Type>()? else {
            return Err(de::Error::custom("an attribute value of no type"));
        };
        let value = match kind {
            Type::S => AttributeValue::S(map.next_value()?),
            Type::N => AttributeValue::N(map.next_value()?),
            Type::B => AttributeValue::B(map.next_value::<Binary>()?.0),
            Type::BOOL => AttributeValue::Bool(map.next_value()?),
            Type::NULL => AttributeValue::Null(map.next_value()?),
            Type::M => AttributeValue::M(map.next_value::<WireItem>()?.0),
            Type::L => AttributeValue::L(map.next_value_seed(List)?),
            Type::SS => AttributeValue::Ss(map.next_value()?),
            Type::NS => AttributeValue::Ns(map.next_value()?),
            Type::BS => AttributeValue::Bs(
                map.next_value::<Vec<Binary>>()?
                    .into_iter()
                    .map(|b| b.0)
                    .collect(),
            ),
        };
        if map.next_key::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom("an attribute value of two types"));
        }
        Ok(Wire(value))
    }
}

/// A list's values, gathered without a list of wrappers in between.
struct List;

impl<'de> DeserializeSeed<'de> for List {
    type Value = Vec<AttributeValue>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for List {
    type Value = Vec<AttributeValue>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of DynamoDB attribute values")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Wire(v)) = seq.next_element()? {
            values.push(v);
        }
        Ok(values)
    }
}

/// A binary value: base64 in the JSON.
struct Binary(Vec<u8>);

impl<'de> Deserialize<'de> for Binary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<'de, str>::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map(Binary)
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
