//! Support agent: a dialogue with a customer, database lookups, policies and a ticket.

use serde_json::json;

use super::{event_turns, paragraph, plant, Builder, Rng};
use crate::history::{FindingKind, Item};

const ITEMS: [&str; 10] = [
    "espresso machine",
    "standing desk",
    "noise-cancelling headphones",
    "air purifier",
    "road bike helmet",
    "4K monitor",
    "cast-iron skillet",
    "robot vacuum",
    "mechanical keyboard",
    "smart thermostat",
];
const FIRST: [&str; 8] = [
    "Maria", "Kenji", "Amara", "Lukas", "Priya", "Tom", "Sofia", "Omar",
];
const LAST: [&str; 8] = [
    "Silva", "Tanaka", "Okafor", "Meyer", "Raman", "Walsh", "Rossi", "Haddad",
];
const STATUSES: [&str; 4] = ["delivered", "shipped", "processing", "returned"];
/// Flags of ordinary orders: identifiers like the one that matters.
const FLAGS: [&str; 6] = [
    "gift_wrap",
    "express_shipping",
    "address_changed",
    "partial_refund",
    "backorder",
    "price_match",
];

const SYSTEM: &str = "You are a customer support agent for an online store. Tools: lookup_customer(email), \
list_orders(customer_id), get_policy(topic), query_db(sql), create_ticket(order_id, summary), \
send_email(customer_id, body). Verify the customer's identity, follow the written policies exactly, and never \
promise what a policy does not allow.";

/// One support episode of `turns` tool turns.
#[allow(clippy::too_many_lines)] // a script of one episode, data read top to bottom
pub fn episode(rng: &mut Rng, index: usize, turns: usize) -> crate::Episode {
    let name = format!("{} {}", rng.pick(&FIRST), rng.pick(&LAST));
    let email = format!("{}@example.com", name.to_lowercase().replace(' ', "."));
    let customer_id = format!("CUS-{}", rng.range(10_000, 99_999));
    let tier = *rng.pick(&["silver", "gold", "platinum"]);
    let order = format!("ORD-{}", rng.range(100_000, 999_999));
    let product = *rng.pick(&ITEMS);
    let amount = rng.range(210, 900);
    let limit = [150usize, 200, 250][index % 3];
    let ticket = format!("TCK-{}", rng.range(1000, 9999));
    let verbosity = [1usize, 2, 3, 1, 2][index % 5];
    let task = format!("Help {name} with a damaged {product} delivery");
    let mut b = Builder::new(format!("support-{index:02}"), "gen/support", task.clone());
    b.meta("family", json!("support"));
    b.push(Item::system(SYSTEM));
    b.push(Item::user(format!(
        "Hi, I'm {name} ({email}). My {product} arrived broken and I want my money back."
    )));
    let events = event_turns(turns, &[10, 30, 45, 60, 75, 90]);
    // Findings by role, once introduced.
    let (mut customer, mut damaged, mut policy, mut offer, mut ticket_f, mut wait) =
        (None, None, None, None, None, None);
    for t in 0..turns {
        if t == events[0] {
            b.push(Item::assistant(format!(
                "I'll look up the account for {email}."
            )));
            let record = json!({
                "customer_id": customer_id, "name": name, "email": email, "tier": tier,
                "since": format!("20{}-0{}-1{}", rng.range(12, 23), rng.range(1, 9), rng.range(0, 9)),
                "open_tickets": 0, "lifetime_orders": rng.range(3, 140),
            });
            let at = b.tool(
                "lookup_customer",
                &json!({ "email": email }),
                record.to_string(),
            );
            customer = Some(b.finding(
                FindingKind::Recall,
                at,
                format!("{name} is customer {customer_id}"),
                vec![customer_id.clone()],
                "What is the customer's ID?".into(),
                customer_id.clone(),
            ));
        } else if t == events[1] {
            if let Some(f) = customer {
                b.need(f);
            }
            b.push(Item::assistant(format!(
                "Listing {name}'s orders (customer {customer_id})."
            )));
            let mut rows = vec!["order_id   | date       | item                         | amount  | status    | flags".to_string()];
            for _ in 0..(25 * verbosity + rng.range(5, 60)) {
                let flags = if rng.percent(35) {
                    *rng.pick(&FLAGS)
                } else {
                    "-"
                };
                rows.push(format!(
                    "ORD-{} | 2025-{:02}-{:02} | {:<28} | {:>4}.{:02} | {:<9} | {flags}",
                    rng.range(100_000, 999_999),
                    rng.range(1, 12),
                    rng.range(1, 28),
                    rng.pick(&ITEMS),
                    rng.range(5, 900),
                    rng.range(0, 99),
                    rng.pick(&STATUSES)
                ));
            }
            let row = format!("{order} | 2025-11-{:02} | {product:<28} | {amount:>4}.00 | delivered | damaged_in_transit", rng.range(1, 28));
            plant(rng, &mut rows, row, 50, 95);
            let at = b.tool(
                "list_orders",
                &json!({ "customer_id": customer_id }),
                rows.join("\n"),
            );
            damaged = Some(b.finding(
                FindingKind::Recall,
                at,
                format!("{order} ({product}, {amount}) flagged damaged_in_transit"),
                vec![order.clone(), "damaged_in_transit".into()],
                format!("Which order of the {product} is marked damaged?"),
                order.clone(),
            ));
        } else if t == events[2] {
            b.push(Item::assistant("Checking the refund policy.".to_string()));
            let mut lines: Vec<String> = (0..(8 * verbosity + rng.range(4, 14)))
                .map(|i| {
                    let n = rng.range(2, 5);
                    format!("{}.{} {}", i / 4 + 1, i % 4 + 1, paragraph(rng, n))
                })
                .collect();
            let rule = format!("Refunds above ${limit} require approval from a team lead; offer a replacement first.");
            plant(rng, &mut lines, rule, 50, 90);
            let at = b.tool(
                "get_policy",
                &json!({ "topic": "refunds" }),
                lines.join("\n"),
            );
            policy = Some(b.finding(
                FindingKind::Recall,
                at,
                format!("refunds above ${limit} need approval"),
                vec![format!("Refunds above ${limit} require approval")],
                "How much can the agent hand back before a team lead has to sign off?".into(),
                format!("${limit}"),
            ));
        } else if t == events[3] {
            for f in [damaged, policy].into_iter().flatten() {
                b.need(f);
            }
            let at = b.push(Item::assistant(format!(
                "Decision: offer a replacement instead of a refund, because ${amount} is above the ${limit} approval limit."
            )));
            b.tool(
                "query_db",
                &json!({ "sql": format!("SELECT sku, stock FROM inventory WHERE name = '{product}'") }),
                format!("sku        | stock\nSKU-{} | {}", rng.range(1000, 9999), rng.range(1, 40)),
            );
            offer = Some(b.finding(
                FindingKind::Decision,
                at,
                "replacement offered instead of a refund".into(),
                vec!["offer a replacement instead of a refund".into()],
                "What was decided because of the approval limit?".into(),
                "offer a replacement instead of a refund".into(),
            ));
        } else if t == events[4] {
            for f in [damaged, offer].into_iter().flatten() {
                b.need(f);
            }
            b.push(Item::assistant(format!(
                "Opening a ticket for the replacement of {order}."
            )));
            let at = b.tool(
                "create_ticket",
                &json!({ "order_id": order, "summary": "Ship a replacement unit" }),
                format!("Created ticket {ticket} for {order} (queue: warehouse, priority: normal)"),
            );
            ticket_f = Some(b.finding(
                FindingKind::Artifact,
                at,
                format!("ticket {ticket} created"),
                vec![ticket.clone()],
                "Under which case number will the warehouse handle the replacement?".into(),
                ticket.clone(),
            ));
        } else if t == events[5] {
            for f in [customer, ticket_f].into_iter().flatten() {
                b.need(f);
            }
            let at = b.push(Item::assistant(format!(
                "Before the replacement ships, the warehouse has to confirm {ticket}; {name} gets an email after that."
            )));
            b.tool(
                "send_email",
                &json!({ "customer_id": customer_id, "body": "Your replacement is being prepared." }),
                "queued message msg_".to_string() + &rng.hex(12),
            );
            wait = Some(b.finding(
                FindingKind::Continuation,
                at,
                "waiting for warehouse confirmation".into(),
                vec![format!("the warehouse has to confirm {ticket}")],
                "What has to happen before the replacement ships?".into(),
                format!("the warehouse has to confirm {ticket}"),
            ));
        } else {
            if rng.percent(25) {
                b.push(Item::user(
                    (*rng.pick(&[
                        "Any update? I have been waiting for a while.",
                        "Can you also check whether my last invoice was correct?",
                        "I would really prefer a refund if that is possible.",
                        "Is there anything else you need from me?",
                    ]))
                    .to_string(),
                ));
            }
            match rng.range(0, 3) {
                0 | 1 => {
                    b.push(Item::assistant(
                        "Let me check the related records.".to_string(),
                    ));
                    let rows: Vec<String> = (0..rng.range(5, 30 * verbosity))
                        .map(|_| {
                            format!(
                                "{} | {} | {} | {}",
                                rng.range(1, 99_999),
                                rng.pick(&["refund", "exchange", "note", "call", "email"]),
                                rng.pick(&STATUSES),
                                super::sentence(rng)
                            )
                        })
                        .collect();
                    b.tool(
                        "query_db",
                        &json!({ "sql": format!("SELECT * FROM events WHERE customer_id = '{customer_id}' LIMIT 200") }),
                        rows.join("\n"),
                    );
                }
                _ => {
                    b.push(Item::assistant(
                        "Reading the relevant policy section.".to_string(),
                    ));
                    let lines: Vec<String> = (0..rng.range(3, 8 * verbosity))
                        .map(|_| {
                            let n = rng.range(2, 5);
                            paragraph(rng, n)
                        })
                        .collect();
                    b.tool(
                        "get_policy",
                        &json!({ "topic": rng.pick(&["shipping", "warranty", "returns", "privacy"]) }),
                        lines.join("\n"),
                    );
                }
            }
        }
    }
    for f in [damaged, offer, ticket_f, wait].into_iter().flatten() {
        b.need(f);
    }
    if let Some(f) = damaged {
        b.open_probe(
            f,
            FindingKind::Recall,
            "Which of the customer's orders arrived damaged?".into(),
            format!("{order}, the {product} (${amount}), flagged damaged_in_transit"),
        );
    }
    if let Some(f) = ticket_f {
        b.open_probe(
            f,
            FindingKind::Artifact,
            "What did the agent create for the customer?".into(),
            format!("Ticket {ticket} in the warehouse queue to replace the {product} of {order}"),
        );
    }
    if let Some(f) = offer {
        b.open_probe(
            f,
            FindingKind::Decision,
            "What did the agent offer instead of a refund, and why?".into(),
            format!("A replacement, because ${amount} is above the ${limit} approval limit"),
        );
    }
    if let Some(f) = wait {
        b.open_probe(
            f,
            FindingKind::Continuation,
            "What happens next in this case?".into(),
            format!("The warehouse confirms {ticket}, then the replacement ships and {name} gets an email"),
        );
    }
    b.push(Item::assistant(format!(
        "I've arranged a replacement for your {product} (order {order}) instead of a refund, under ticket {ticket}; you'll get an email once the warehouse confirms."
    )));
    b.finish()
}
