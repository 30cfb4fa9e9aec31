import { useState, type FormEvent } from "react";
import { graphql, useMutation } from "react-relay";
import { toProblem, type Problem } from "../errors";
import { ErrorMessage, FieldError } from "./ErrorMessage";
import type { AddMemberFormMutation } from "./__generated__/AddMemberFormMutation.graphql";

/** createUser: a taken username or email comes back as `CONFLICT` on that field. */
export function AddMemberForm(props: { org: string; usersConnectionId: string }) {
  const [username, setUsername] = useState("");
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [problem, setProblem] = useState<Problem | null>(null);
  const [added, setAdded] = useState<string | null>(null);
  const [commit, isInFlight] = useMutation<AddMemberFormMutation>(graphql`
    mutation AddMemberFormMutation($input: CreateUserInput!, $connections: [ID!]!) {
      createUser(input: $input) {
        user @appendNode(connections: $connections, edgeTypeName: "UserEdge") {
          id
          username
          name
          ticketCount
        }
      }
    }
  `);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    setAdded(null);
    commit({
      variables: {
        input: { org: props.org, username, name, email, role: "MEMBER" },
        connections: [props.usersConnectionId],
      },
      onCompleted: (response) => {
        setAdded(response.createUser.user.username);
        setUsername("");
        setName("");
        setEmail("");
      },
      onError: (error) => setProblem(toProblem(error)),
    });
  };

  return (
    <form onSubmit={submit} data-testid="add-member-form">
      <label>
        Username <input data-testid="member-username" value={username} onChange={(e) => setUsername(e.target.value)} required />
        <FieldError problem={problem} field="username" />
      </label>
      <label>
        Name <input data-testid="member-name" value={name} onChange={(e) => setName(e.target.value)} required />
      </label>
      <label>
        Email <input data-testid="member-email" type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
        <FieldError problem={problem} field="email" />
      </label>
      <button data-testid="member-submit" disabled={isInFlight}>
        Add member
      </button>
      {problem && !["username", "email"].includes(problem.field ?? "") && <ErrorMessage problem={problem} />}
      {added && <p data-testid="member-added">Added {added}.</p>}
    </form>
  );
}
