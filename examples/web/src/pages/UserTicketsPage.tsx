import { useState } from "react";
import { graphql, useLazyLoadQuery, usePaginationFragment } from "react-relay";
import { TicketRow } from "../components/TicketRow";
import type { UserTicketsPage_user$key } from "./__generated__/UserTicketsPage_user.graphql";
import type { UserTicketsPageQuery } from "./__generated__/UserTicketsPageQuery.graphql";

const PAGE = 5;

/** A user's tickets, newest first, opened at either end and paged both ways. */
export default function UserTicketsPage(props: { org: string; username: string }) {
  const [from, setFrom] = useState<"newest" | "oldest">("newest");
  const { user } = useLazyLoadQuery<UserTicketsPageQuery>(
    graphql`
      query UserTicketsPageQuery($org: String!, $username: String!, $first: Int, $last: Int) {
        user(org: $org, username: $username) {
          name
          username
          ...UserTicketsPage_user @arguments(first: $first, last: $last)
        }
      }
    `,
    {
      org: props.org,
      username: props.username,
      // The newest page is `first`; the oldest is `last` (pages of a newest-first list).
      first: from === "newest" ? PAGE : null,
      last: from === "oldest" ? PAGE : null,
    },
  );
  if (!user) return <p data-testid="not-found">No user “{props.username}”.</p>;

  return (
    <>
      <h1 data-testid="user-name">
        {user.name} <span className="muted">@{user.username}</span>
      </h1>
      <p>
        Start from{" "}
        <button data-testid="start-newest" disabled={from === "newest"} onClick={() => setFrom("newest")}>
          newest
        </button>{" "}
        <button data-testid="start-oldest" disabled={from === "oldest"} onClick={() => setFrom("oldest")}>
          oldest
        </button>
      </p>
      <UserTickets user={user} />
    </>
  );
}

function UserTickets(props: { user: UserTicketsPage_user$key }) {
  const { data, hasNext, hasPrevious, isLoadingNext, isLoadingPrevious, loadNext, loadPrevious } =
    usePaginationFragment(
      graphql`
        fragment UserTicketsPage_user on User
        @refetchable(queryName: "UserTicketsPagePaginationQuery")
        @argumentDefinitions(
          first: { type: "Int" }
          after: { type: "String" }
          last: { type: "Int" }
          before: { type: "String" }
        ) {
          tickets(first: $first, after: $after, last: $last, before: $before)
            @connection(key: "UserTicketsPage_tickets") {
            totalCount
            edges {
              node {
                id
                ...TicketRow_ticket
              }
            }
          }
        }
      `,
      props.user,
    );
  const { edges, totalCount } = data.tickets;
  return (
    <section data-testid="user-tickets">
      {/* Newer tickets come before the list: `last`/`before` from its first cursor. */}
      <button
        data-testid="load-newer"
        disabled={!hasPrevious || isLoadingPrevious}
        onClick={() => loadPrevious(PAGE)}
      >
        {isLoadingPrevious ? "Loading…" : "Load newer"}
      </button>
      <ul className="rows">
        {edges.map((edge) => (
          <TicketRow key={edge.node.id} ticket={edge.node} />
        ))}
      </ul>
      {/* Older ones after it: `first`/`after` from its last cursor. */}
      <button data-testid="load-older" disabled={!hasNext || isLoadingNext} onClick={() => loadNext(PAGE)}>
        {isLoadingNext ? "Loading…" : "Load older"}
      </button>
      <p className="muted" data-testid="user-tickets-count">
        Showing {edges.length} of {totalCount}
      </p>
    </section>
  );
}
