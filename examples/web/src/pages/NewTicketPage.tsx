import { useState, type FormEvent } from "react";
import { graphql, useLazyLoadQuery, useMutation } from "react-relay";
import { ConnectionHandler } from "relay-runtime";
import { ErrorMessage, FieldError } from "../components/ErrorMessage";
import { toProblem, type Problem } from "../errors";
import { href } from "../router";
import type { NewTicketPageMutation, TicketPriority } from "./__generated__/NewTicketPageMutation.graphql";
import type { NewTicketPageQuery } from "./__generated__/NewTicketPageQuery.graphql";

const FORM_FIELDS = ["requester", "assignee", "title", "body"];

/**
 * createTicket, optimistically: the new ticket is prepended to the OPEN queue and the
 * requester's list at once, replaced by the server's answer (or removed on an error).
 */
export default function NewTicketPage({ org }: { org: string }) {
  const { organization } = useLazyLoadQuery<NewTicketPageQuery>(
    graphql`
      query NewTicketPageQuery($slug: String!) {
        organization(slug: $slug) {
          id
          users(first: 50) {
            nodes {
              id
              username
              name
            }
          }
        }
      }
    `,
    { slug: org },
  );
  const users = organization?.users.nodes ?? [];
  const [requester, setRequester] = useState(users[0]?.username ?? "");
  const [assignee, setAssignee] = useState("");
  const [title, setTitle] = useState("");
  const [body, setBody] = useState("");
  const [priority, setPriority] = useState<TicketPriority>("NORMAL");
  const [problem, setProblem] = useState<Problem | null>(null);
  const [created, setCreated] = useState<{ id: string; title: string } | null>(null);
  const [commit, isInFlight] = useMutation<NewTicketPageMutation>(graphql`
    mutation NewTicketPageMutation($input: CreateTicketInput!, $connections: [ID!]!)
    @raw_response_type {
      createTicket(input: $input) {
        ticket @prependNode(connections: $connections, edgeTypeName: "TicketEdge") {
          id
          title
          ...TicketRow_ticket
        }
      }
    }
  `);
  if (!organization) return <p data-testid="not-found">No organization “{org}”.</p>;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    setCreated(null);
    const requesterId = users.find((u) => u.username === requester)?.id;
    // The lists that already hold the new ticket's place: updated in the store, no refetch.
    const connections = [
      ConnectionHandler.getConnectionID(organization.id, "TicketQueue_tickets", { status: "OPEN" }),
      ...(requesterId ? [ConnectionHandler.getConnectionID(requesterId, "UserTicketsPage_tickets")] : []),
    ];
    const person = (username: string) => ({
      id: users.find((u) => u.username === username)?.id ?? `client:user:${username}`,
      username,
    });
    const pending = `client:new-ticket:${Date.now()}`;
    commit({
      variables: {
        input: { org, requester, title, body, priority, assignee: assignee || null },
        connections,
      },
      optimisticResponse: {
        createTicket: {
          ticket: {
            id: pending,
            ticketId: pending,
            title,
            status: "OPEN",
            priority,
            version: 1,
            createdAt: new Date().toISOString(),
            requester: person(requester),
            assignee: assignee ? person(assignee) : null,
          },
        },
      },
      onCompleted: ({ createTicket }) => {
        setCreated(createTicket.ticket);
        setTitle("");
        setBody("");
      },
      onError: (error) => setProblem(toProblem(error)),
    });
  };

  return (
    <>
      <h1>New ticket</h1>
      <form onSubmit={submit} data-testid="new-ticket-form" className="stacked">
        <label>
          Requester{" "}
          <select data-testid="new-ticket-requester" value={requester} onChange={(e) => setRequester(e.target.value)}>
            {users.map((u) => (
              <option key={u.id} value={u.username}>
                {u.name}
              </option>
            ))}
          </select>
          <FieldError problem={problem} field="requester" />
        </label>
        <label>
          Assignee (a username, or empty){" "}
          <input data-testid="new-ticket-assignee" value={assignee} onChange={(e) => setAssignee(e.target.value)} />
          <FieldError problem={problem} field="assignee" />
        </label>
        <label>
          Title <input data-testid="new-ticket-title" value={title} onChange={(e) => setTitle(e.target.value)} required />
          <FieldError problem={problem} field="title" />
        </label>
        <label>
          Body
          <textarea data-testid="new-ticket-body" value={body} onChange={(e) => setBody(e.target.value)} rows={4} required />
          <FieldError problem={problem} field="body" />
        </label>
        <label>
          Priority{" "}
          <select data-testid="new-ticket-priority" value={priority} onChange={(e) => setPriority(e.target.value as TicketPriority)}>
            {(["LOW", "NORMAL", "HIGH", "URGENT"] as const).map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        </label>
        <button data-testid="new-ticket-submit" disabled={isInFlight}>
          {isInFlight ? "Creating…" : "Create ticket"}
        </button>
      </form>
      {problem && !FORM_FIELDS.includes(problem.field ?? "") && <ErrorMessage problem={problem} />}
      {created && (
        <p data-testid="new-ticket-created">
          Created <a href={href("tickets", created.id)}>{created.title}</a>.
        </p>
      )}
    </>
  );
}
