//! A chart of several tables (`examples/charts/box-office.toml`): each entity and index in
//! one table, a pattern reading one, a mutation's actions told apart by their keys, and
//! what cannot be served across tables refused (rule `tables`).

use super::*;

const BOX: &str = include_str!("../../../examples/charts/box-office.toml");

#[track_caller]
fn refused(from: &str, to: &str) -> Refused {
    assert!(BOX.contains(from), "{from}");
    match parse(&BOX.replace(from, to)) {
        Ok(_) => panic!("a chart with `{to}` for `{from}` is served"),
        Err(r) => r,
    }
}

#[test]
fn each_entity_index_and_pattern_is_in_its_table() {
    let chart = accepted(BOX);
    assert_eq!(chart.tables.len(), 2);
    assert_eq!(chart.table.name, "box-office");
    assert_eq!(chart.tables[1].name, "box-office-bookings");
    assert_eq!(chart.tables[1].pk_type, crate::store::KeyType::N);
    assert_eq!(chart.entities["Venue"].table, 0);
    assert_eq!(chart.entities["Booking"].table, 1);
    assert_eq!(chart.indexes["ByEvent"].table, 1);
    assert_eq!(chart.patterns[&3].table, 0);
    assert_eq!(chart.patterns[&5].table, 1);
    // The first table's schema holds no index of the other's; the other's holds its own.
    assert!(chart.table_schema().indexes.is_empty());
    let others = chart.other_tables();
    assert_eq!(others.len(), 1);
    assert_eq!(others[0].0, "box-office-bookings");
    assert_eq!(others[0].1.pk, "BookingNo");
    assert_eq!(others[0].1.sk, None);
    assert_eq!(others[0].1.indexes[0].name, "ByEvent");
    // A booking's item is keyed in its table; an event's in the first.
    let booking = chart
        .samples
        .iter()
        .find(
            |i| matches!(i.get("Type"), Some(crate::store::AttributeValue::S(t)) if t == "Booking"),
        )
        .unwrap();
    assert_eq!(chart.table_of_item(booking), 1);
    assert_eq!(chart.key_of(booking).map(|k| k.pk), Some("1001".to_owned()));
    // `chart explain` names each table with its own indexes.
    let shown = crate::chart::explain::markdown(&crate::chart::explain::explain(&chart, 1024));
    assert!(
        shown.contains(
            "table `box-office`: partition key `PK`, sort key `SK`; table `box-office-bookings`: partition key `BookingNo`; ByEvent (`EventRef`, `BookedAt`, ALL)."
        ),
        "{shown}"
    );
}

#[test]
fn a_mutation_across_tables_sends_each_action_to_its_table() {
    let chart = accepted(BOX);
    let plan = &chart.plans["bookSeats"];
    let written: Vec<&str> = plan
        .written(&chart)
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert!(
        written.contains(&"Booking") && written.contains(&"Event"),
        "{written:?}"
    );
}

#[test]
fn one_table_and_several_are_not_both_declared() {
    let r = refused(
        "[[tables]]\nname = \"box-office\"",
        "[table]\nname = \"lobby\"\npartition_key = \"PK\"\nsort_key = \"SK\"\n\n[[tables]]\nname = \"box-office\"",
    );
    refuses(&r, "tables", None, None, "not both");
}

#[test]
fn a_table_is_declared_once_and_named_as_dynamodb_takes_it() {
    let r = refused("name = \"box-office-bookings\"", "name = \"box-office\"");
    refuses(&r, "tables", None, None, "declared twice");
    let r = refused("name = \"box-office-bookings\"", "name = \"bookings!\"");
    refuses(&r, "tables", None, None, "table `bookings!`");
}

#[test]
fn an_entity_or_index_names_a_declared_table() {
    let r = refused(
        "[entities.Booking]\ndescription = \"Seats booked at an event, by booking number.\"\ntable = \"box-office-bookings\"",
        "[entities.Booking]\ndescription = \"Seats booked at an event, by booking number.\"\ntable = \"bookings\"",
    );
    refuses(&r, "tables", None, None, "names table `bookings`");
    let r = refused(
        "[indexes.ByEvent]\ntable = \"box-office-bookings\"",
        "[indexes.ByEvent]\ntable = \"tickets\"",
    );
    refuses(&r, "tables", None, None, "names table `tickets`");
}

#[test]
fn an_entity_joins_only_its_own_tables_indexes() {
    // The index moved to the first table, the bookings left in theirs.
    let r = refused(
        "[indexes.ByEvent]\ntable = \"box-office-bookings\"",
        "[indexes.ByEvent]\ntable = \"box-office\"",
    );
    assert!(
        r.0.iter()
            .any(|x| x.rule == "tables" || x.rule == "indexes"),
        "{r}"
    );
}

#[test]
fn a_pattern_reads_one_table() {
    // A venue's events read with bookings: the children are in the other table.
    let r = refused(
        "parent = \"Venue\"\nchildren = \"Event\"",
        "parent = \"Venue\"\nchildren = \"Booking\"",
    );
    refuses(&r, "tables", None, None, "one request reads one table");
}

#[test]
fn several_tables_store_one_type_attribute_alike() {
    let r = refused(
        "partition_key = { name = \"BookingNo\", type = \"N\" }\ntype_attribute = \"Type\"",
        "partition_key = { name = \"BookingNo\", type = \"N\" }\ntype_attribute = false",
    );
    refuses(&r, "tables", None, None, "every item names its entity");
    let r = refused(
        "partition_key = { name = \"BookingNo\", type = \"N\" }\ntype_attribute = \"Type\"",
        "partition_key = { name = \"BookingNo\", type = \"N\" }\ntype_attribute = \"Kind\"",
    );
    refuses(&r, "tables", None, None, "alike");
}

#[test]
fn a_mutations_entities_in_two_tables_have_keys_that_cannot_be_equal() {
    // A booking keyed as its event is: a transaction's actions could not be told apart by
    // their keys.
    let text = BOX
        .replace(
            "[[tables]]\nname = \"box-office-bookings\"\npartition_key = { name = \"BookingNo\", type = \"N\" }",
            "[[tables]]\nname = \"box-office-bookings\"\npartition_key = \"BPK\"\nsort_key = \"BSK\"",
        )
        .replace(
            "key = [\"{bookingNo}\"]",
            "key = [\"VENUE#{venue}\", \"EVENT#{eventId}\"]",
        );
    match parse(&text) {
        Ok(_) => panic!("a mutation whose actions' tables cannot be told apart is served"),
        Err(r) => refuses(&r, "tables", None, None, "whose keys can be equal"),
    }
}

#[test]
fn a_one_table_chart_is_as_before() {
    let chart = accepted(BUILTIN_SOURCE);
    assert_eq!(chart.tables.len(), 1);
    assert!(!chart.several_tables());
    assert!(chart.other_tables().is_empty());
    assert!(chart.entities.values().all(|e| e.table == 0));
}

#[test]
fn an_index_is_known_to_its_table_by_its_stored_name_once() {
    // Another table's index may share its table's name for it: `stored` names it apart
    // in the chart.
    let both = BOX.replace(
        "[indexes.ByEvent]\ntable = \"box-office-bookings\"",
        "[indexes.VenuesByEvent]\nstored = \"ByEvent\"\npartition_key = \"VenueRef\"\nsort_key = \"VenueSince\"\nprojection = \"ALL\"\n\n[indexes.ByEvent]\ntable = \"box-office-bookings\"",
    );
    let chart = accepted(&both);
    assert_eq!(chart.indexes["VenuesByEvent"].stored, "ByEvent");
    assert_eq!(chart.table_schema().indexes[0].name, "ByEvent");
    assert_eq!(chart.schema_of(1).indexes[0].name, "ByEvent");
    // Not twice in one table, and only as DynamoDB names an index.
    let r = refused(
        "[indexes.ByEvent]\ntable = \"box-office-bookings\"\npartition_key = \"EventRef\"\nsort_key = \"BookedAt\"\nprojection = \"ALL\"",
        "[indexes.ByEvent]\ntable = \"box-office-bookings\"\npartition_key = \"EventRef\"\nsort_key = \"BookedAt\"\nprojection = \"ALL\"\n\n[indexes.Again]\ntable = \"box-office-bookings\"\nstored = \"ByEvent\"\npartition_key = \"AgainRef\"\nprojection = \"ALL\"",
    );
    refuses(
        &r,
        "indexes",
        None,
        None,
        "table box-office-bookings knows index ByEvent by the name `ByEvent` already",
    );
    let r = refused(
        "[indexes.ByEvent]\ntable = \"box-office-bookings\"",
        "[indexes.ByEvent]\ntable = \"box-office-bookings\"\nstored = \"by event\"",
    );
    refuses(&r, "indexes", None, None, "index ByEvent: `stored`");
}

#[test]
fn a_type_value_names_one_entity_of_a_table() {
    let event = "key = [\"VENUE#{venue}\", \"EVENT#{eventId}\"]\n";
    let booking = "key = [\"{bookingNo}\"]\n";
    let venue = "key = [\"VENUE#{slug}\", \"#VENUE\"]\n";
    let with = |text: &str, at: &str| {
        assert_eq!(text.matches(at).count(), 1, "{at}");
        text.replacen(at, &format!("{at}type_value = \"row\"\n"), 1)
    };
    // Of two tables: each item is its own table's entity of that value.
    let chart = accepted(&with(&with(BOX, event), booking));
    assert_eq!(chart.entities["Event"].type_value, "row");
    assert_eq!(chart.entities["Booking"].type_value, "row");
    // Of one table: its items could not be told apart.
    match parse(&with(&with(BOX, event), venue)) {
        Ok(_) => panic!("two entities of one table store one type value"),
        Err(r) => refuses(&r, "stored", None, None, "its type value `row` is"),
    }
}
