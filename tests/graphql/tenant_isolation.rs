//! The tenant-isolation matrix, on every engine: every query, connection, reference,
//! `node`/`nodes`, cursor and mutation, aimed at `acme`'s data by callers of `globex`
//! (member and admin). Each answer must equal, data and errors alike, what the same
//! request gets when it names something that does not exist (no existence oracle); every
//! read case is also run as an `acme` member, whose answer must hold data (so no case can
//! pass by reading nothing). After the mutations the whole table is exactly as before
//! and no domain event was published. Roles: a member may not manage users or change
//! orders, an admin may not create another organization. The whole matrix runs twice:
//! with callers as built, and (`…_with_jwks_tokens`) with callers as an identity
//! provider's tokens verify to through its JWKS and the claim mapping.

use crate::common;

use crate::common::records::GlobalId;
use common::graphql::{error_codes, Api};
use common::jwks::{cognito, sign, Provider};
use itemgraph::auth::{Access, Authenticator, Role};
use itemgraph::chart::kinds::{Id, Slug, Username};
use itemgraph::store::{Item, Scan, Store};
use serde_json::{json, Value};

/// A ULID no demo entity has.
const MISSING_ID: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
/// An organization that does not exist.
const NO_ORG: &str = "no-such-org";

fn caller(org: &str, role: Role) -> Access {
    if let Ok(access) = JWKS_CALLERS.try_with(|callers| callers.access(org, role)) {
        return access;
    }
    Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse(org).unwrap(),
        role,
        subject: None,
    }
}

tokio::task_local! {
    /// Set for the matrix's run with JWKS-verified tokens: every caller is then what an
    /// identity provider's token verifies to.
    static JWKS_CALLERS: std::sync::Arc<JwksCallers>;
}

/// Callers as an identity provider's tokens make them: Cognito ID tokens signed with a key
/// of a JWKS served on loopback, verified and mapped (`custom:org`, `cognito:groups`) by
/// an authenticator configured as `serve --jwt-jwks-url` is.
struct JwksCallers {
    _provider: Provider,
    auth: Authenticator,
}

impl JwksCallers {
    fn access(&self, org: &str, role: Role) -> Access {
        let group = match role {
            Role::Admin => "itemgraph-admins",
            Role::Member => "itemgraph-members",
        };
        let token = sign("rsa-1", &cognito(org, group));
        let access = self
            .auth
            .authenticate(Some(format!("Bearer {token}").as_bytes()))
            .expect("the provider's token verifies");
        match &access {
            Access::Tenant {
                org: got, role: r, ..
            } => {
                assert_eq!((got.as_str(), *r), (org, role), "mapped as configured");
            }
            Access::Unrestricted => panic!("a token never grants everything"),
        }
        access
    }
}

/// Runs a case of the matrix with JWKS-verified callers.
async fn with_jwks_tokens(case: impl std::future::Future<Output = ()>) {
    let provider = Provider::start(&["rsa-1"], 3600).await;
    let auth = provider
        .authenticator(&[])
        .await
        .expect("the authenticator");
    let callers = std::sync::Arc::new(JwksCallers {
        _provider: provider,
        auth,
    });
    JWKS_CALLERS.scope(callers, case).await;
}

async fn reads_of_another_organization_answer_as_missing_with_jwks_tokens(api: &Api) {
    with_jwks_tokens(reads_of_another_organization_answer_as_missing(api)).await;
}

async fn writes_to_another_organization_change_nothing_with_jwks_tokens(api: &Api) {
    with_jwks_tokens(writes_to_another_organization_change_nothing(api)).await;
}

async fn members_may_not_do_what_only_admins_may_with_jwks_tokens(api: &Api) {
    with_jwks_tokens(members_may_not_do_what_only_admins_may(api)).await;
}

async fn emails_of_another_organization_are_no_oracle_with_jwks_tokens(api: &Api) {
    with_jwks_tokens(emails_of_another_organization_are_no_oracle(api)).await;
}

/// What a response says, without the trace: requests legitimately differ (another
/// organization's partition is not read at all; a ticket id is read, then hidden). The
/// trace of a tenant carries no item counts, which would tell a hidden item from a
/// missing one.
fn answer(mut response: Value) -> Value {
    if let Some(o) = response.as_object_mut() {
        o.remove("extensions");
    }
    response
}

/// Real `acme` ids and cursors, read as an `acme` caller.
struct Acme {
    ticket_id: String,
    order_id: String,
    users_cursor: String,
    orders_cursor: String,
    tickets_cursor: String,
    open_cursor: String,
}

async fn acme(api: &Api) -> Acme {
    let data = api
        .data(
            r#"{ organization(slug: "acme") {
                  users(first: 2) { pageInfo { endCursor } }
                  orders(first: 2) { pageInfo { endCursor } nodes { orderId } }
                  open: tickets(status: OPEN, first: 2) { pageInfo { endCursor } }
                }
                user(org: "acme", username: "wile-e-coyote") {
                  tickets(first: 2) { pageInfo { endCursor } nodes { ticketId } }
                } }"#,
            Value::Null,
        )
        .await;
    let s = |p: &str| {
        data.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{p} in {data:#}"))
            .to_owned()
    };
    Acme {
        ticket_id: s("/user/tickets/nodes/0/ticketId"),
        order_id: s("/organization/orders/nodes/0/orderId"),
        users_cursor: s("/organization/users/pageInfo/endCursor"),
        orders_cursor: s("/organization/orders/pageInfo/endCursor"),
        tickets_cursor: s("/user/tickets/pageInfo/endCursor"),
        open_cursor: s("/organization/open/pageInfo/endCursor"),
    }
}

fn slug(s: &str) -> Slug {
    Slug::parse(s).unwrap()
}

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

/// The read cases: a query naming `acme`'s data, and the same query naming data that
/// does not exist.
fn read_cases(a: &Acme) -> Vec<(&'static str, String, String)> {
    let org_gid = |o: &str| GlobalId::Organization(slug(o)).encode();
    let user_gid =
        |o: &str| GlobalId::User(slug(o), Username::parse("wile-e-coyote").unwrap()).encode();
    let ticket_gid = |t: &str| GlobalId::Ticket(id(t)).encode();
    let order_gid = |o: &str, i: &str| GlobalId::Order(slug(o), id(i)).encode();
    let org_fields = "slug name plan userCount ticketCount";
    let both = |name: &'static str, f: &dyn Fn(&str) -> String| (name, f("acme"), f(NO_ORG));
    vec![
        both("organization", &|o| {
            format!(r#"{{ organization(slug: "{o}") {{ {org_fields} }} }}"#)
        }),
        both("organization users first page", &|o| {
            format!(
                r#"{{ organization(slug: "{o}") {{ slug users(first: 3) {{ totalCount nodes {{ username email }} }} }} }}"#
            )
        }),
        both("organization newest orders", &|o| {
            format!(
                r#"{{ organization(slug: "{o}") {{ orders(last: 3) {{ nodes {{ orderId totalCents buyer {{ email }} }} }} }} }}"#
            )
        }),
        both("organization status queue", &|o| {
            format!(
                r#"{{ organization(slug: "{o}") {{ tickets(status: OPEN, first: 3) {{ nodes {{ ticketId title }} }} }} }}"#
            )
        }),
        both("nested connections", &|o| {
            format!(
                r#"{{ organization(slug: "{o}") {{ users(first: 2) {{ nodes {{ tickets(first: 2) {{ nodes {{ title requester {{ email }} assignee {{ email }} }} }} }} }} }} }}"#
            )
        }),
        both("user with tickets", &|o| {
            format!(
                r#"{{ user(org: "{o}", username: "wile-e-coyote") {{ email tickets(last: 3) {{ nodes {{ title organization {{ name }} }} }} }} }}"#
            )
        }),
        both("user alone", &|o| {
            format!(r#"{{ user(org: "{o}", username: "wile-e-coyote") {{ email name }} }}"#)
        }),
        (
            "ticket by plain id",
            format!(
                r#"{{ ticket(id: "{}") {{ title requester {{ email }} }} }}"#,
                a.ticket_id
            ),
            format!(r#"{{ ticket(id: "{MISSING_ID}") {{ title requester {{ email }} }} }}"#),
        ),
        (
            "ticket by global id",
            format!(
                r#"{{ ticket(id: "{}") {{ title organization {{ slug }} }} }}"#,
                ticket_gid(&a.ticket_id)
            ),
            format!(
                r#"{{ ticket(id: "{}") {{ title organization {{ slug }} }} }}"#,
                ticket_gid(MISSING_ID)
            ),
        ),
        (
            "order by plain id",
            format!(
                r#"{{ order(id: "{}") {{ totalCents lines {{ sku }} }} }}"#,
                a.order_id
            ),
            format!(r#"{{ order(id: "{MISSING_ID}") {{ totalCents lines {{ sku }} }} }}"#),
        ),
        (
            "order by global id",
            format!(
                r#"{{ order(id: "{}") {{ totalCents lines {{ sku }} }} }}"#,
                order_gid("acme", &a.order_id)
            ),
            format!(
                r#"{{ order(id: "{}") {{ totalCents lines {{ sku }} }} }}"#,
                order_gid("acme", MISSING_ID)
            ),
        ),
        both("node organization", &|o| {
            format!(
                r#"{{ node(id: "{}") {{ id ... on Organization {{ name }} }} }}"#,
                org_gid(o)
            )
        }),
        both("node user", &|o| {
            format!(
                r#"{{ node(id: "{}") {{ id ... on User {{ email }} }} }}"#,
                user_gid(o)
            )
        }),
        (
            "node ticket",
            format!(
                r#"{{ node(id: "{}") {{ id ... on Ticket {{ title }} }} }}"#,
                ticket_gid(&a.ticket_id)
            ),
            format!(
                r#"{{ node(id: "{}") {{ id ... on Ticket {{ title }} }} }}"#,
                ticket_gid(MISSING_ID)
            ),
        ),
        (
            "node order",
            format!(
                r#"{{ node(id: "{}") {{ id ... on Order {{ totalCents lines {{ sku }} }} }} }}"#,
                order_gid("acme", &a.order_id)
            ),
            format!(
                r#"{{ node(id: "{}") {{ id ... on Order {{ totalCents lines {{ sku }} }} }} }}"#,
                order_gid("acme", MISSING_ID)
            ),
        ),
        (
            "nodes",
            format!(
                r#"{{ nodes(ids: ["{}", "{}", "{}", "{}"]) {{ id }} }}"#,
                org_gid("acme"),
                user_gid("acme"),
                ticket_gid(&a.ticket_id),
                order_gid("acme", &a.order_id)
            ),
            format!(
                r#"{{ nodes(ids: ["{}", "{}", "{}", "{}"]) {{ id }} }}"#,
                org_gid(NO_ORG),
                user_gid(NO_ORG),
                ticket_gid(MISSING_ID),
                order_gid(NO_ORG, MISSING_ID)
            ),
        ),
        // Cursors are signed for their connection, so a missing organization has none:
        // the cursor cases compare with the first page of a missing organization.
        (
            "users cursor",
            format!(
                r#"{{ organization(slug: "acme") {{ users(first: 2, after: "{}") {{ nodes {{ email }} }} }} }}"#,
                a.users_cursor
            ),
            format!(
                r#"{{ organization(slug: "{NO_ORG}") {{ users(first: 2) {{ nodes {{ email }} }} }} }}"#
            ),
        ),
        (
            "orders cursor backwards",
            format!(
                r#"{{ organization(slug: "acme") {{ orders(last: 2, before: "{}") {{ nodes {{ orderId }} }} }} }}"#,
                a.orders_cursor
            ),
            format!(
                r#"{{ organization(slug: "{NO_ORG}") {{ orders(last: 2) {{ nodes {{ orderId }} }} }} }}"#
            ),
        ),
        (
            "status queue cursor",
            format!(
                r#"{{ organization(slug: "acme") {{ tickets(status: OPEN, first: 2, after: "{}") {{ nodes {{ title }} }} }} }}"#,
                a.open_cursor
            ),
            format!(
                r#"{{ organization(slug: "{NO_ORG}") {{ tickets(status: OPEN, first: 2) {{ nodes {{ title }} }} }} }}"#
            ),
        ),
        (
            "user tickets cursor",
            format!(
                r#"{{ user(org: "acme", username: "wile-e-coyote") {{ tickets(first: 2, after: "{}") {{ nodes {{ title }} }} }} }}"#,
                a.tickets_cursor
            ),
            format!(
                r#"{{ user(org: "{NO_ORG}", username: "wile-e-coyote") {{ tickets(first: 2) {{ nodes {{ title }} }} }} }}"#
            ),
        ),
    ]
}

/// Whether `data` holds anything but nulls and empty lists.
fn holds_data(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Array(a) => a.iter().any(holds_data),
        Value::Object(o) => o.values().any(holds_data),
        _ => true,
    }
}

async fn reads_of_another_organization_answer_as_missing(api: &Api) {
    let a = acme(api).await;
    let own = caller("acme", Role::Member);
    for (name, query, missing) in read_cases(&a) {
        let mine = api.run_as(&own, &query, Value::Null).await;
        assert!(
            error_codes(&mine).is_empty() && holds_data(&mine["data"]),
            "{name}: an acme caller must see acme's data: {mine:#}"
        );
        for role in [Role::Member, Role::Admin] {
            let other = caller("globex", role);
            let traced = api.run_as(&other, &query, Value::Null).await;
            let trace = traced["extensions"].to_string();
            assert!(
                !trace.contains("itemCount") && !trace.contains("consumedCapacity"),
                "{name}: a tenant's trace must not count items or capacity: {traced:#}"
            );
            // Only an id that names no organization (a ticket's, a plain order id) is read
            // before it can be hidden; a partition naming another organization is not.
            let reads_by_id =
                name.contains("plain id") || name.contains("ticket") || name == "nodes";
            if !reads_by_id {
                assert_eq!(
                    common::graphql::request_count(&traced),
                    0,
                    "{name}: another organization's partition is not read: {traced:#}"
                );
            }
            let theirs = answer(traced);
            let absent = answer(api.run_as(&other, &missing, Value::Null).await);
            assert_eq!(
                theirs, absent,
                "{name} as a globex {role:?}: must answer as if acme's data did not exist"
            );
            assert!(
                !holds_data(&theirs["data"]),
                "{name} as a globex {role:?} leaked: {theirs:#}"
            );
            assert!(
                !theirs.to_string().contains("acme"),
                "{name} as a globex {role:?} leaked: {theirs:#}"
            );
        }
    }
}

/// Every item of the table, sorted by key: to compare the table before and after.
async fn table(store: &dyn Store) -> Vec<String> {
    let mut all = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .scan(Scan {
                limit: None,
                start,
                consistent_read: true,
                segment: None,
                ..Default::default()
            })
            .await
            .expect("scan");
        // Sorted attributes: a HashMap's Debug order is not stable.
        all.extend(page.items.iter().map(|i: &Item| {
            let sorted: std::collections::BTreeMap<_, _> = i.iter().collect();
            format!("{sorted:?}")
        }));
        match page.last_evaluated_key {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    all.sort();
    all
}

/// Mutations naming `acme`'s data, and the same naming data that does not exist.
fn write_cases(a: &Acme) -> Vec<(&'static str, &'static str, Value, Value)> {
    let order_gid = GlobalId::Order(slug("acme"), id(&a.order_id)).encode();
    let missing_order_gid = GlobalId::Order(slug("acme"), id(MISSING_ID)).encode();
    let ticket_gid = GlobalId::Ticket(id(&a.ticket_id)).encode();
    let create_user =
        "mutation($input: CreateUserInput!) { createUser(input: $input) { user { email } } }";
    let update_user =
        "mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { email } } }";
    let delete_user =
        "mutation($input: DeleteUserInput!) { deleteUser(input: $input) { deletedUserId } }";
    let create_ticket =
        "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { title } } }";
    let update_ticket =
        "mutation($input: UpdateTicketInput!) { updateTicket(input: $input) { ticket { title } } }";
    let place_order =
        "mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { totalCents } } }";
    let order_status = "mutation($input: UpdateOrderStatusInput!) { updateOrderStatus(input: $input) { order { status } } }";
    let user = |org: &str| {
        json!({"input": {"org": org, "username": "hubert", "email": "hubert@looney.example",
                         "name": "Hubert", "role": "MEMBER"}})
    };
    let ticket = |org: &str| {
        json!({"input": {"org": org, "requester": "wile-e-coyote", "title": "Hijack",
                         "body": "from another organization", "priority": "LOW"}})
    };
    let order = |org: &str| {
        json!({"input": {"org": org, "buyer": "wile-e-coyote", "currency": "USD",
                         "lines": [{"sku": "X", "description": "X", "quantity": 1, "unitPriceCents": 1}]}})
    };
    vec![
        ("createUser", create_user, user("acme"), user(NO_ORG)),
        (
            "updateUser",
            update_user,
            json!({"input": {"org": "acme", "username": "wile-e-coyote", "name": "Hijacked"}}),
            json!({"input": {"org": NO_ORG, "username": "wile-e-coyote", "name": "Hijacked"}}),
        ),
        (
            "deleteUser",
            delete_user,
            json!({"input": {"org": "acme", "username": "road-runner"}}),
            json!({"input": {"org": NO_ORG, "username": "road-runner"}}),
        ),
        (
            "createTicket",
            create_ticket,
            ticket("acme"),
            ticket(NO_ORG),
        ),
        (
            "updateTicket plain id",
            update_ticket,
            json!({"input": {"ticketId": a.ticket_id, "expectedVersion": 1, "title": "Hijacked"}}),
            json!({"input": {"ticketId": MISSING_ID, "expectedVersion": 1, "title": "Hijacked"}}),
        ),
        (
            "updateTicket global id",
            update_ticket,
            json!({"input": {"ticketId": ticket_gid, "expectedVersion": 1, "status": "CLOSED"}}),
            json!({"input": {"ticketId": GlobalId::Ticket(id(MISSING_ID)).encode(),
                             "expectedVersion": 1, "status": "CLOSED"}}),
        ),
        ("placeOrder", place_order, order("acme"), order(NO_ORG)),
        (
            "updateOrderStatus plain id",
            order_status,
            json!({"input": {"orderId": a.order_id, "status": "CANCELLED", "expectedVersion": 1}}),
            json!({"input": {"orderId": MISSING_ID, "status": "CANCELLED", "expectedVersion": 1}}),
        ),
        (
            "updateOrderStatus global id",
            order_status,
            json!({"input": {"orderId": order_gid, "status": "CANCELLED", "expectedVersion": 1}}),
            json!({"input": {"orderId": missing_order_gid, "status": "CANCELLED", "expectedVersion": 1}}),
        ),
    ]
}

async fn writes_to_another_organization_change_nothing(api: &Api) {
    let a = acme(api).await;
    let before = table(api.store.as_ref()).await;
    let mut watch = common::changes::Watch::new(api.store.as_ref()).await;
    for (name, mutation, vars, missing) in write_cases(&a) {
        for role in [Role::Admin, Role::Member] {
            let other = caller("globex", role);
            let theirs = answer(api.run_as(&other, mutation, vars.clone()).await);
            let absent = answer(api.run_as(&other, mutation, missing.clone()).await);
            assert_eq!(
                theirs, absent,
                "{name} as a globex {role:?}: must answer as if acme's data did not exist"
            );
            let codes = error_codes(&theirs);
            assert!(
                codes == ["NOT_FOUND"] || codes == ["FORBIDDEN"],
                "{name} as a globex {role:?}: {theirs:#}"
            );
        }
    }
    assert_eq!(
        table(api.store.as_ref()).await,
        before,
        "nothing may change"
    );
    watch.none().await;
}

async fn members_may_not_do_what_only_admins_may(api: &Api) {
    let a = acme(api).await;
    let member = caller("acme", Role::Member);
    let before = table(api.store.as_ref()).await;
    let forbidden = write_cases(&a)
        .into_iter()
        .filter(|(name, ..)| name.contains("User") || name.contains("OrderStatus"));
    for (name, mutation, vars, _) in forbidden {
        let response = api.run_as(&member, mutation, vars).await;
        assert_eq!(
            error_codes(&response),
            ["FORBIDDEN"],
            "{name}: {response:#}"
        );
        assert_eq!(
            common::graphql::request_count(&response),
            0,
            "{name}: refused before any read"
        );
    }
    let create_org = "mutation($input: CreateOrganizationInput!) { createOrganization(input: $input) { organization { slug } } }";
    let looney = json!({"input": {"slug": "looney", "name": "Looney", "plan": "FREE"}});
    let response = api.run_as(&member, create_org, looney.clone()).await;
    assert_eq!(error_codes(&response), ["FORBIDDEN"], "{response:#}");
    // An admin may create only the organization its token names.
    let admin = caller("acme", Role::Admin);
    let response = api.run_as(&admin, create_org, looney).await;
    assert_eq!(error_codes(&response), ["FORBIDDEN"], "{response:#}");
    assert_eq!(
        table(api.store.as_ref()).await,
        before,
        "nothing may change"
    );

    // What a member may do, it does.
    let (_, mutation, vars, _) = write_cases(&a)
        .into_iter()
        .find(|(name, ..)| *name == "createTicket")
        .unwrap();
    let response = api.run_as(&member, mutation, vars).await;
    assert!(error_codes(&response).is_empty(), "{response:#}");
    let response = api
        .run_as(
            &admin,
            "mutation($input: UpdateOrderStatusInput!) { updateOrderStatus(input: $input) { order { status } } }",
            json!({"input": {"orderId": a.order_id, "status": "CANCELLED", "expectedVersion": 1}}),
        )
        .await;
    let codes = error_codes(&response);
    assert!(
        codes.is_empty() || codes == ["INVALID_TRANSITION"] || codes == ["VERSION_MISMATCH"],
        "an admin reaches its own order: {response:#}"
    );
    let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{report}");
}

/// Email addresses are unique per organization: whether another organization holds an
/// address changes no answer. A globex admin creating a user (or moving one) to an
/// address acme uses gets exactly what it gets for an address nobody uses; within acme
/// the address stays taken.
async fn emails_of_another_organization_are_no_oracle(api: &Api) {
    let admin = caller("globex", Role::Admin);
    let create_user = "mutation($input: CreateUserInput!) { createUser(input: $input) { user { username name role } } }";
    let update_user = "mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { username name role } } }";
    let user = |username: &str, email: &str| {
        json!({"input": {"org": "globex", "username": username, "email": email,
                         "name": "Hank", "role": "MEMBER"}})
    };
    let taken = "wile-e-coyote@acme.example";
    let theirs = answer(api.run_as(&admin, create_user, user("hank", taken)).await);
    let nobodys = answer(
        api.run_as(&admin, create_user, user("hank2", "nobody@nowhere.example"))
            .await,
    );
    assert!(error_codes(&theirs).is_empty(), "{theirs:#}");
    assert_eq!(
        theirs["data"]["createUser"]["user"]["name"],
        nobodys["data"]["createUser"]["user"]["name"]
    );
    assert_eq!(error_codes(&theirs), error_codes(&nobodys));
    let moved = |username: &str, email: &str| json!({"input": {"org": "globex", "username": username, "email": email}});
    let to_theirs = answer(
        api.run_as(
            &admin,
            update_user,
            moved("hank2", "road-runner@acme.example"),
        )
        .await,
    );
    let to_nobodys = answer(
        api.run_as(&admin, update_user, moved("hank", "other@nowhere.example"))
            .await,
    );
    assert!(error_codes(&to_theirs).is_empty(), "{to_theirs:#}");
    assert!(error_codes(&to_nobodys).is_empty(), "{to_nobodys:#}");
    // Within one organization the address stays unique.
    let acme_admin = caller("acme", Role::Admin);
    let again = api
        .run_as(
            &acme_admin,
            create_user,
            json!({"input": {"org": "acme", "username": "copycat", "email": taken,
                             "name": "Copy", "role": "MEMBER"}}),
        )
        .await;
    assert_eq!(error_codes(&again), ["CONFLICT"], "{again:#}");
    assert_eq!(again["errors"][0]["extensions"]["field"], "email");
    let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{report}");
}

on_every_engine!(
    reads_of_another_organization_answer_as_missing,
    emails_of_another_organization_are_no_oracle,
    writes_to_another_organization_change_nothing,
    members_may_not_do_what_only_admins_may,
    reads_of_another_organization_answer_as_missing_with_jwks_tokens,
    emails_of_another_organization_are_no_oracle_with_jwks_tokens,
    writes_to_another_organization_change_nothing_with_jwks_tokens,
    members_may_not_do_what_only_admins_may_with_jwks_tokens,
);
