/**
 * @generated SignedSource<<bea45ffd13b42c5e2e8991e6df230bd9>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type TicketPriority = "HIGH" | "LOW" | "NORMAL" | "URGENT" | "%future added value";
export type TicketStatus = "CLOSED" | "OPEN" | "PENDING" | "SOLVED" | "%future added value";
export type UpdateTicketInput = {
  assignee?: string | null | undefined;
  body?: string | null | undefined;
  expectedVersion: number;
  priority?: TicketPriority | null | undefined;
  status?: TicketStatus | null | undefined;
  ticketId: string;
  title?: string | null | undefined;
};
export type TicketPageUpdateMutation$variables = {
  input: UpdateTicketInput;
};
export type TicketPageUpdateMutation$data = {
  readonly updateTicket: {
    readonly ticket: {
      readonly id: string;
      readonly priority: TicketPriority;
      readonly status: TicketStatus;
      readonly title: string;
      readonly updatedAt: string;
      readonly version: number;
    };
  };
};
export type TicketPageUpdateMutation = {
  response: TicketPageUpdateMutation$data;
  variables: TicketPageUpdateMutation$variables;
};

const node: ConcreteRequest = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "input"
  }
],
v1 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "input",
        "variableName": "input"
      }
    ],
    "concreteType": "UpdateTicketPayload",
    "kind": "LinkedField",
    "name": "updateTicket",
    "plural": false,
    "selections": [
      {
        "alias": null,
        "args": null,
        "concreteType": "Ticket",
        "kind": "LinkedField",
        "name": "ticket",
        "plural": false,
        "selections": [
          {
            "alias": null,
            "args": null,
            "kind": "ScalarField",
            "name": "id",
            "storageKey": null
          },
          {
            "alias": null,
            "args": null,
            "kind": "ScalarField",
            "name": "title",
            "storageKey": null
          },
          {
            "alias": null,
            "args": null,
            "kind": "ScalarField",
            "name": "status",
            "storageKey": null
          },
          {
            "alias": null,
            "args": null,
            "kind": "ScalarField",
            "name": "priority",
            "storageKey": null
          },
          {
            "alias": null,
            "args": null,
            "kind": "ScalarField",
            "name": "version",
            "storageKey": null
          },
          {
            "alias": null,
            "args": null,
            "kind": "ScalarField",
            "name": "updatedAt",
            "storageKey": null
          }
        ],
        "storageKey": null
      }
    ],
    "storageKey": null
  }
];
return {
  "fragment": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Fragment",
    "metadata": null,
    "name": "TicketPageUpdateMutation",
    "selections": (v1/*:: as any*/),
    "type": "Mutation",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "TicketPageUpdateMutation",
    "selections": (v1/*:: as any*/)
  },
  "params": {
    "cacheID": "a166f70264f1b0e4a8f6ee8caed34b80",
    "id": null,
    "metadata": {},
    "name": "TicketPageUpdateMutation",
    "operationKind": "mutation",
    "text": "mutation TicketPageUpdateMutation(\n  $input: UpdateTicketInput!\n) {\n  updateTicket(input: $input) {\n    ticket {\n      id\n      title\n      status\n      priority\n      version\n      updatedAt\n    }\n  }\n}\n"
  }
};
})();

(node as any).hash = "87887afe56b287f51039327720b02aea";

export default node;
