//! Which claims of a verified token name the caller's organization and role: the claim
//! mapping (`--jwt-org-claim`, `--jwt-role-claim`, `--jwt-role-map`).
//!
//! Identity providers put these in their own places: Amazon Cognito custom attributes as
//! `custom:org` and groups as `cognito:groups`; Auth0 namespaced claims such as
//! `https://example.com/org`; Okta and Microsoft Entra ID arrays (`groups`, `roles`);
//! Keycloak nests realm roles in `realm_access.roles`. A claim is named by its name, or by
//! a path of names joined by `.`: a name that exists as a top-level claim is taken as it
//! is (so `https://example.com/org` is one claim), otherwise the path is walked.
//!
//! The organization is a string (an organization slug), or an array holding exactly one.
//! The role comes from a string or an array of strings: through the role map
//! (`GROUP=ROLE`) when one is given, otherwise the values `admin` and `member`; of several
//! values the highest role wins. A token that maps to no organization or no role is refused
//! with a message naming the claim looked for.

use serde_json::{Map, Value};

use super::{Access, AuthError, Role};
use crate::chart::kinds::Tenant;

/// How a verified token's claims become an [`Access`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMapping {
    /// The claim (name or path) holding the organization's slug.
    pub org: String,
    /// The claim (name or path) holding the role, or the groups mapped to one.
    pub role: String,
    /// Group (or role value) → role; empty: the values `admin` and `member` themselves.
    pub role_map: Vec<(String, Role)>,
}

impl Default for ClaimMapping {
    /// itemgraph's own tokens: top-level `org` and `role`.
    fn default() -> Self {
        ClaimMapping {
            org: "org".into(),
            role: "role".into(),
            role_map: Vec::new(),
        }
    }
}

/// Values of a claim shown in a refusal, at most: the message stays short whatever the
/// token holds.
const SHOWN_VALUES: usize = 5;

impl ClaimMapping {
    /// The access these claims grant.
    pub fn access(&self, claims: &Map<String, Value>) -> Result<Access, AuthError> {
        let org = self.org(claims)?;
        let role = self.role(claims)?;
        let subject = claims.get("sub").and_then(Value::as_str).map(str::to_owned);
        Ok(Access::Tenant { org, role, subject })
    }

    fn org(&self, claims: &Map<String, Value>) -> Result<Tenant, AuthError> {
        let name = &self.org;
        let value = lookup(claims, name).ok_or_else(|| {
            AuthError::Invalid(format!(
                "the token has no `{name}` claim, which names the organization \
                 (--jwt-org-claim)"
            ))
        })?;
        let text = match value {
            Value::String(s) => Some(s.as_str()),
            Value::Array(values) if values.len() == 1 => values[0].as_str(),
            _ => None,
        };
        text.and_then(|t| Tenant::parse(t).ok()).ok_or_else(|| {
            AuthError::Invalid(format!(
                "the `{name}` claim is not the name of a tenant: one string, without whitespace, `#` or control characters (--jwt-org-claim)"
            ))
        })
    }

    fn role(&self, claims: &Map<String, Value>) -> Result<Role, AuthError> {
        let name = &self.role;
        let value = lookup(claims, name).ok_or_else(|| {
            AuthError::Invalid(format!(
                "the token has no `{name}` claim, which names the role (--jwt-role-claim)"
            ))
        })?;
        let values: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(values) => values.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let role = values
            .iter()
            .filter_map(|v| self.role_of(v))
            .max_by_key(|role| match role {
                Role::Admin => 1,
                Role::Member => 0,
            });
        role.ok_or_else(|| {
            let shown: Vec<&str> = values.iter().take(SHOWN_VALUES).copied().collect();
            let more = if values.len() > SHOWN_VALUES {
                ", …"
            } else {
                ""
            };
            let how = if self.role_map.is_empty() {
                "`admin` or `member`, or map it with --jwt-role-map GROUP=ROLE".to_owned()
            } else {
                let groups: Vec<&str> = self.role_map.iter().map(|(g, _)| g.as_str()).collect();
                format!("one of the mapped {}", groups.join(", "))
            };
            AuthError::Invalid(format!(
                "the `{name}` claim ({}{more}) maps to no role: expected {how}",
                shown.join(", ")
            ))
        })
    }

    fn role_of(&self, value: &str) -> Option<Role> {
        if self.role_map.is_empty() {
            return match value {
                "admin" => Some(Role::Admin),
                "member" => Some(Role::Member),
                _ => None,
            };
        }
        self.role_map
            .iter()
            .filter(|(group, _)| group == value)
            .map(|(_, role)| *role)
            .max_by_key(|role| matches!(role, Role::Admin))
    }
}

/// The claim `name`: a top-level claim of that very name, else the path its `.`s separate.
fn lookup<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// `GROUP=ROLE`, as `--jwt-role-map` takes it.
pub fn parse_role_map_entry(s: &str) -> Result<(String, Role), String> {
    let (group, role) = s
        .rsplit_once('=')
        .filter(|(group, _)| !group.is_empty())
        .ok_or_else(|| format!("`{s}`: write GROUP=ROLE, e.g. itemgraph-admins=admin"))?;
    let role = match role.trim() {
        "admin" => Role::Admin,
        "member" => Role::Member,
        other => return Err(format!("`{other}` is not a role: admin or member")),
    };
    Ok((group.to_owned(), role))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
    }

    fn mapping(org: &str, role: &str, map: &[(&str, Role)]) -> ClaimMapping {
        ClaimMapping {
            org: org.into(),
            role: role.into(),
            role_map: map.iter().map(|(g, r)| ((*g).to_owned(), *r)).collect(),
        }
    }

    fn tenant(org: &str, role: Role) -> Access {
        Access::Tenant {
            org: Tenant::parse(org).unwrap(),
            role,
            subject: None,
        }
    }

    fn without_subject(access: Access) -> Access {
        match access {
            Access::Tenant { org, role, .. } => Access::Tenant {
                org,
                role,
                subject: None,
            },
            other => other,
        }
    }

    fn refusal(mapping: &ClaimMapping, token: Value) -> String {
        match mapping.access(&claims(token)) {
            Err(AuthError::Invalid(message)) => message,
            other => panic!("not refused: {other:?}"),
        }
    }

    // Each provider's token, as its documentation shows one, with the organization and
    // groups a team would add. Cognito: an ID token (custom attribute, groups).
    #[test]
    fn amazon_cognito_id_token() {
        let token = json!({
            "sub": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "cognito:groups": ["itemgraph-admins", "everyone"],
            "email_verified": true,
            "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example",
            "cognito:username": "wile",
            "origin_jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "aud": "xxxxxxxxxxxxexample",
            "event_id": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "token_use": "id",
            "auth_time": 1500009400,
            "custom:org": "acme",
            "exp": 1500013000,
            "iat": 1500009400,
            "jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "email": "wile@example.com"
        });
        let m = mapping(
            "custom:org",
            "cognito:groups",
            &[
                ("itemgraph-admins", Role::Admin),
                ("everyone", Role::Member),
            ],
        );
        let access = m.access(&claims(token.clone())).unwrap();
        assert_eq!(without_subject(access.clone()), tenant("acme", Role::Admin));
        assert_eq!(
            access,
            Access::Tenant {
                org: Tenant::parse("acme").unwrap(),
                role: Role::Admin,
                subject: Some("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee".into())
            }
        );
        // Without the map, group names are no roles.
        let unmapped = mapping("custom:org", "cognito:groups", &[]);
        assert!(refusal(&unmapped, token)
            .contains("`cognito:groups` claim (itemgraph-admins, everyone) maps to no role"));
    }

    // Cognito's access token carries groups but no custom attributes: the organization
    // must come from a claim the team adds (a pre-token-generation trigger).
    #[test]
    fn amazon_cognito_access_token_without_the_org_is_refused_naming_it() {
        let token = json!({
            "sub": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "cognito:groups": ["itemgraph-members"],
            "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example",
            "version": 2,
            "client_id": "xxxxxxxxxxxxexample",
            "origin_jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "event_id": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "token_use": "access",
            "scope": "phone openid profile email",
            "auth_time": 1500009400,
            "exp": 1500013000,
            "iat": 1500009400,
            "jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "username": "wile"
        });
        let m = mapping(
            "custom:org",
            "cognito:groups",
            &[("itemgraph-members", Role::Member)],
        );
        let message = refusal(&m, token);
        assert!(message.contains("no `custom:org` claim"), "{message}");
        assert!(message.contains("--jwt-org-claim"), "{message}");
    }

    // Auth0: custom claims must be namespaced with a URL; the name holds dots and colons.
    #[test]
    fn auth0_namespaced_claims() {
        let token = json!({
            "iss": "https://example.us.auth0.com/",
            "sub": "auth0|123456",
            "aud": ["https://api.example.com", "https://example.us.auth0.com/userinfo"],
            "iat": 1516239022,
            "exp": 1516325422,
            "azp": "my_client_id",
            "scope": "openid profile",
            "https://example.com/org": "globex",
            "https://example.com/roles": ["member"]
        });
        let m = mapping("https://example.com/org", "https://example.com/roles", &[]);
        assert_eq!(
            without_subject(m.access(&claims(token)).unwrap()),
            tenant("globex", Role::Member)
        );
    }

    // Okta: a `groups` claim added to the authorization server.
    #[test]
    fn okta_groups() {
        let token = json!({
            "ver": 1,
            "jti": "AT.0mP4JKAZX1iACIT4vbEDF7LpvDVjxypPMf0D7uX39RE",
            "iss": "https://example.okta.com/oauth2/default",
            "aud": "api://default",
            "iat": 1526590779,
            "exp": 1526594379,
            "cid": "0oabskvc6442nkvQO0h7",
            "uid": "00ub0oNGTSWTBKOLGLNR",
            "scp": ["openid", "email"],
            "sub": "wile@example.com",
            "org": "initech",
            "groups": ["Everyone", "itemgraph-admins"]
        });
        let m = mapping("org", "groups", &[("itemgraph-admins", Role::Admin)]);
        assert_eq!(
            without_subject(m.access(&claims(token)).unwrap()),
            tenant("initech", Role::Admin)
        );
    }

    // Microsoft Entra ID: app roles in `roles`, the tenant id (a GUID, which is a slug)
    // in `tid`.
    #[test]
    fn microsoft_entra_roles() {
        let token = json!({
            "aud": "6e74172b-be56-4843-9ff4-e66a39bb12e3",
            "iss": "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0",
            "iat": 1537231048,
            "nbf": 1537231048,
            "exp": 1537234948,
            "aio": "AXQAi/8IAAAAtAaZLo3ChMif6KOnttRB7eBq4/DccQzjcJGxPYy/C3jDaNGxXd6wNIIVGRghNRnwJ1lOcAnNZcjvkoyrFxCttv33140RioOFJ4bCCGVuoCag1uOTT22222gHwLPYQ/uf79QX+0KIijdrmp69RctzmQ==",
            "azp": "6e74172b-be56-4843-9ff4-e66a39bb12e3",
            "azpacr": "0",
            "name": "Abe Lincoln",
            "oid": "690222be-ff1a-4d56-abd1-7e4f7d38e474",
            "preferred_username": "abeli@microsoft.com",
            "rh": "I",
            "roles": ["Itemgraph.Member"],
            "scp": "access_as_user",
            "sub": "HKZpfaHyWadeOouYlitjrI-KffTm222X5rrV3xDqfKQ",
            "tid": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "uti": "fqiBqXLPj0eQa82S-IYFAA",
            "ver": "2.0"
        });
        let m = mapping("tid", "roles", &[("Itemgraph.Member", Role::Member)]);
        assert_eq!(
            without_subject(m.access(&claims(token.clone())).unwrap()),
            tenant("72f988bf-86f1-41af-91ab-2d7cd011db47", Role::Member)
        );
        // Mapped to the wrong claim: refused, naming it.
        let wrong = mapping("tid", "groups", &[("Itemgraph.Member", Role::Member)]);
        assert!(refusal(&wrong, token).contains("no `groups` claim"));
    }

    // Keycloak: realm roles nested in `realm_access`, organizations (Keycloak 25+) as a list.
    #[test]
    fn keycloak_realm_access() {
        let token = json!({
            "exp": 1700000000,
            "iat": 1699999700,
            "jti": "a1b2c3d4-0000-0000-0000-000000000000",
            "iss": "https://keycloak.example.com/realms/itemgraph",
            "aud": "account",
            "sub": "f1e2d3c4-0000-0000-0000-000000000000",
            "typ": "Bearer",
            "azp": "itemgraph-web",
            "realm_access": { "roles": ["offline_access", "uma_authorization", "admin"] },
            "resource_access": { "account": { "roles": ["manage-account"] } },
            "scope": "openid profile email organization",
            "organization": ["acme"],
            "preferred_username": "wile"
        });
        let m = mapping("organization", "realm_access.roles", &[]);
        assert_eq!(
            without_subject(m.access(&claims(token.clone())).unwrap()),
            tenant("acme", Role::Admin)
        );
        let mut two = token.clone();
        two["organization"] = json!(["acme", "globex"]);
        assert!(refusal(&m, two).contains("`organization` claim is not the name of a tenant"));
        let mut none = token;
        none["realm_access"]["roles"] = json!(["offline_access"]);
        let message = refusal(&m, none);
        assert!(
            message.contains("`realm_access.roles` claim (offline_access) maps to no role"),
            "{message}"
        );
    }

    #[test]
    fn role_map_entries_parse_or_say_how() {
        assert_eq!(
            parse_role_map_entry("itemgraph-admins=admin"),
            Ok(("itemgraph-admins".into(), Role::Admin))
        );
        assert_eq!(
            parse_role_map_entry("a=b=member"),
            Ok(("a=b".into(), Role::Member))
        );
        assert!(parse_role_map_entry("admins").is_err());
        assert!(parse_role_map_entry("admins=owner").is_err());
        assert!(parse_role_map_entry("=admin").is_err());
    }
}
