import { Suspense, useEffect, useMemo, useState } from "react";
import { graphql, RelayEnvironmentProvider, useLazyLoadQuery } from "react-relay";
import type { AppViewerQuery } from "./__generated__/AppViewerQuery.graphql";
import { clearToken, getToken, storeToken } from "./auth";
import { ErrorBoundary } from "./components/ErrorBoundary";
import LiveTicketsPage from "./pages/LiveTicketsPage";
import NewTicketPage from "./pages/NewTicketPage";
import OrderPage from "./pages/OrderPage";
import OrganizationPage from "./pages/OrganizationPage";
import SignInPage from "./pages/SignInPage";
import TicketPage from "./pages/TicketPage";
import UserTicketsPage from "./pages/UserTicketsPage";
import { createRelayEnvironment } from "./relay/environment";
import { href, useRoute } from "./router";

export default function App() {
  const [token, setToken] = useState(getToken);
  // One environment (store and WebSocket) per token: signing out drops both.
  const relay = useMemo(() => (token ? createRelayEnvironment(token) : null), [token]);
  useEffect(() => () => void relay?.dispose(), [relay]);
  const route = useRoute();

  const signOut = () => {
    clearToken();
    setToken(null);
  };
  if (!token || !relay) {
    return <SignInPage onSignIn={(t) => (storeToken(t), setToken(t))} />;
  }
  return (
    <RelayEnvironmentProvider environment={relay.environment}>
      <ErrorBoundary onSignOut={signOut}>
        <Suspense fallback={<p data-testid="loading">Loading…</p>}>
          <Shell route={route} signOut={signOut} />
        </Suspense>
      </ErrorBoundary>
    </RelayEnvironmentProvider>
  );
}

/** Who is signed in, as the server says (`viewer`), around the page of the route. */
function Shell({ route, signOut }: { route: string[]; signOut: () => void }) {
  const { viewer } = useLazyLoadQuery<AppViewerQuery>(
    graphql`
      query AppViewerQuery {
        viewer {
          role
          organization {
            slug
            name
          }
          user {
            name
          }
        }
      }
    `,
    {},
  );
  const org = viewer.organization?.slug;
  return (
    <>
      <nav>
        <a href={href()} data-testid="nav-org">
          Organization
        </a>
        <a href={href("new-ticket")} data-testid="nav-new-ticket">
          New ticket
        </a>
        <a href={href("live")} data-testid="nav-live">
          Live
        </a>
        <span className="muted" data-testid="signed-in-as">
          {viewer.user ? `${viewer.user.name} · ` : ""}
          {viewer.organization?.name ?? "no organization"} · {viewer.role?.toLowerCase() ?? "signed out"}
        </span>
        <button data-testid="sign-out" onClick={signOut}>
          Sign out
        </button>
      </nav>
      <main>
        {org ? (
          <ErrorBoundary key={route.join("/")} onSignOut={signOut}>
            <Suspense fallback={<p data-testid="loading">Loading…</p>}>
              <Page route={route} org={org} />
            </Suspense>
          </ErrorBoundary>
        ) : (
          <p data-testid="no-organization">
            The token names no organization this server has. <button onClick={signOut}>Sign in again</button>
          </p>
        )}
      </main>
    </>
  );
}

function Page({ route, org }: { route: string[]; org: string }) {
  const [page, id] = route;
  switch (page) {
    case undefined:
      return <OrganizationPage org={org} />;
    case "users":
      return <UserTicketsPage org={org} username={id} />;
    case "tickets":
      return <TicketPage key={id} id={id} />;
    case "new-ticket":
      return <NewTicketPage org={org} />;
    case "orders":
      return <OrderPage key={id} id={id} />;
    case "live":
      return <LiveTicketsPage org={org} />;
    default:
      return <p data-testid="not-found">No such page.</p>;
  }
}
