import { graphql, useFragment } from "react-relay";
import { formatDate } from "../format";
import { href } from "../router";
import type { TicketRow_ticket$key } from "./__generated__/TicketRow_ticket.graphql";

export function TicketRow(props: { ticket: TicketRow_ticket$key }) {
  const ticket = useFragment(
    graphql`
      fragment TicketRow_ticket on Ticket {
        id
        ticketId
        title
        status
        priority
        version
        createdAt
        requester {
          username
        }
        assignee {
          username
        }
      }
    `,
    props.ticket,
  );
  return (
    <li className="row" data-testid="ticket-row" data-ticket-id={ticket.ticketId}>
      <a href={href("tickets", ticket.id)} data-testid="ticket-link">
        {ticket.title}
      </a>{" "}
      <span className={`badge ${ticket.status}`} data-testid="ticket-row-status">
        {ticket.status}
      </span>{" "}
      <span className="muted">
        {ticket.priority} · by {ticket.requester.username}
        {ticket.assignee ? ` → ${ticket.assignee.username}` : " · unassigned"} ·{" "}
        {formatDate(ticket.createdAt)} · v{ticket.version}
      </span>
    </li>
  );
}
