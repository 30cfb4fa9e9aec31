import { useState, type FormEvent } from "react";
import { looksLikeToken } from "../auth";
import { GRAPHQL_URL } from "../relay/environment";

/** A stub: paste a token minted by `itemgraph token`; a real app would run an OAuth flow. */
export default function SignInPage({ onSignIn }: { onSignIn: (token: string) => void }) {
  const [token, setToken] = useState("");
  const [invalid, setInvalid] = useState(false);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const trimmed = token.trim().replace(/^Bearer\s+/i, "");
    if (!looksLikeToken(trimmed)) return setInvalid(true);
    onSignIn(trimmed);
  };

  return (
    <main>
      <h1>Sign in</h1>
      <p>
        Paste a token for <code>{GRAPHQL_URL}</code>, minted with the server's secret:
      </p>
      <pre>itemgraph token --jwt-secret … --org acme --role admin</pre>
      <form onSubmit={submit} className="stacked">
        <textarea
          data-testid="token-input"
          rows={4}
          value={token}
          onChange={(e) => {
            setToken(e.target.value);
            setInvalid(false);
          }}
          placeholder="eyJ…"
        />
        {invalid && (
          <span role="alert" className="field-error" data-testid="token-invalid">
            That is not a token: a JWT has three parts separated by dots.
          </span>
        )}
        <button data-testid="sign-in-submit">Sign in</button>
      </form>
    </main>
  );
}
