import { useState, useTransition } from "react";
import { graphql, useLazyLoadQuery } from "react-relay";
import { AddMemberForm } from "../components/AddMemberForm";
import { TicketQueue } from "../components/TicketQueue";
import { formatCents, formatDate } from "../format";
import { href } from "../router";
import type {
  OrganizationPageQuery,
  TicketStatus,
} from "./__generated__/OrganizationPageQuery.graphql";

export const STATUSES: readonly TicketStatus[] = ["OPEN", "PENDING", "SOLVED", "CLOSED"];

export default function OrganizationPage({ org }: { org: string }) {
  const [status, setStatus] = useState<TicketStatus>("OPEN");
  const [isSwitching, startTransition] = useTransition();
  const { organization } = useLazyLoadQuery<OrganizationPageQuery>(
    graphql`
      query OrganizationPageQuery($slug: String!, $status: TicketStatus!) {
        organization(slug: $slug) {
          name
          plan
          ticketCount
          ...TicketQueue_organization @arguments(status: $status)
          users(first: 50) @connection(key: "OrganizationPage_users") {
            __id
            totalCount
            edges {
              node {
                id
                username
                name
                ticketCount
              }
            }
          }
          orders(first: 10) {
            totalCount
            nodes {
              id
              orderId
              status
              placedAt
              currency
              totalCents
              buyer {
                username
              }
            }
          }
        }
      }
    `,
    { slug: org, status },
    { fetchPolicy: "store-and-network" },
  );
  if (!organization) return <p data-testid="not-found">No organization “{org}”.</p>;

  return (
    <>
      <h1 data-testid="org-name">{organization.name}</h1>
      <p className="muted">
        {organization.plan} plan · {organization.ticketCount} tickets
      </p>

      <h2>Ticket queues</h2>
      <div role="tablist" className="tabs">
        {STATUSES.map((s) => (
          <button
            key={s}
            role="tab"
            aria-selected={s === status}
            data-testid={`queue-tab-${s}`}
            onClick={() => startTransition(() => setStatus(s))}
          >
            {s}
          </button>
        ))}
        {isSwitching && <span className="muted"> loading…</span>}
      </div>
      <TicketQueue organization={organization} />

      <h2>Members ({organization.users.totalCount})</h2>
      <ul className="rows">
        {organization.users.edges.map(({ node: user }) => (
          <li key={user.id} className="row" data-testid="user-row" data-username={user.username}>
            <a href={href("users", user.username)}>{user.name}</a>{" "}
            <span className="muted">
              @{user.username} · {user.ticketCount} tickets
            </span>
          </li>
        ))}
      </ul>
      <AddMemberForm org={org} usersConnectionId={organization.users.__id} />

      <h2>Newest orders ({organization.orders.totalCount})</h2>
      <ul className="rows">
        {organization.orders.nodes.map((order) => (
          <li key={order.id} className="row" data-testid="order-row" data-order-id={order.orderId}>
            <a href={href("orders", order.id)}>{order.orderId}</a>{" "}
            <span className="badge">{order.status}</span>{" "}
            <span className="muted">
              {formatCents(order.totalCents, order.currency)} · {order.buyer.username} ·{" "}
              {formatDate(order.placedAt)}
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}
