/**
 * @generated SignedSource<<c60ce88e717c3f4e18038d1455c85f3a>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
import { FragmentRefs } from "relay-runtime";
export type TicketPriority = "HIGH" | "LOW" | "NORMAL" | "URGENT" | "%future added value";
export type TicketStatus = "CLOSED" | "OPEN" | "PENDING" | "SOLVED" | "%future added value";
export type CreateTicketInput = {
  assignee?: string | null | undefined;
  body: string;
  org: string;
  priority: TicketPriority;
  requester: string;
  title: string;
};
export type NewTicketPageMutation$variables = {
  connections: ReadonlyArray<string>;
  input: CreateTicketInput;
};
export type NewTicketPageMutation$data = {
  readonly createTicket: {
    readonly ticket: {
      readonly id: string;
      readonly title: string;
      readonly " $fragmentSpreads": FragmentRefs<"TicketRow_ticket">;
    };
  };
};
export type NewTicketPageMutation$rawResponse = {
  readonly createTicket: {
    readonly ticket: {
      readonly assignee: {
        readonly id: string;
        readonly username: string;
      } | null | undefined;
      readonly createdAt: string;
      readonly id: string;
      readonly priority: TicketPriority;
      readonly requester: {
        readonly id: string;
        readonly username: string;
      };
      readonly status: TicketStatus;
      readonly ticketId: string;
      readonly title: string;
      readonly version: number;
    };
  };
};
export type NewTicketPageMutation = {
  rawResponse: NewTicketPageMutation$rawResponse;
  response: NewTicketPageMutation$data;
  variables: NewTicketPageMutation$variables;
};

const node: ConcreteRequest = (function(){
var v0 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "connections"
},
v1 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "input"
},
v2 = [
  {
    "kind": "Variable",
    "name": "input",
    "variableName": "input"
  }
],
v3 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "id",
  "storageKey": null
},
v4 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "title",
  "storageKey": null
},
v5 = [
  {
    "alias": null,
    "args": null,
    "kind": "ScalarField",
    "name": "username",
    "storageKey": null
  },
  (v3/*:: as any*/)
];
return {
  "fragment": {
    "argumentDefinitions": [
      (v0/*:: as any*/),
      (v1/*:: as any*/)
    ],
    "kind": "Fragment",
    "metadata": null,
    "name": "NewTicketPageMutation",
    "selections": [
      {
        "alias": null,
        "args": (v2/*:: as any*/),
        "concreteType": "CreateTicketPayload",
        "kind": "LinkedField",
        "name": "createTicket",
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
              (v3/*:: as any*/),
              (v4/*:: as any*/),
              {
                "args": null,
                "kind": "FragmentSpread",
                "name": "TicketRow_ticket"
              }
            ],
            "storageKey": null
          }
        ],
        "storageKey": null
      }
    ],
    "type": "Mutation",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": [
      (v1/*:: as any*/),
      (v0/*:: as any*/)
    ],
    "kind": "Operation",
    "name": "NewTicketPageMutation",
    "selections": [
      {
        "alias": null,
        "args": (v2/*:: as any*/),
        "concreteType": "CreateTicketPayload",
        "kind": "LinkedField",
        "name": "createTicket",
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
              (v3/*:: as any*/),
              (v4/*:: as any*/),
              {
                "alias": null,
                "args": null,
                "kind": "ScalarField",
                "name": "ticketId",
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
                "name": "createdAt",
                "storageKey": null
              },
              {
                "alias": null,
                "args": null,
                "concreteType": "User",
                "kind": "LinkedField",
                "name": "requester",
                "plural": false,
                "selections": (v5/*:: as any*/),
                "storageKey": null
              },
              {
                "alias": null,
                "args": null,
                "concreteType": "User",
                "kind": "LinkedField",
                "name": "assignee",
                "plural": false,
                "selections": (v5/*:: as any*/),
                "storageKey": null
              }
            ],
            "storageKey": null
          },
          {
            "alias": null,
            "args": null,
            "filters": null,
            "handle": "prependNode",
            "key": "",
            "kind": "LinkedHandle",
            "name": "ticket",
            "handleArgs": [
              {
                "kind": "Variable",
                "name": "connections",
                "variableName": "connections"
              },
              {
                "kind": "Literal",
                "name": "edgeTypeName",
                "value": "TicketEdge"
              }
            ]
          }
        ],
        "storageKey": null
      }
    ]
  },
  "params": {
    "cacheID": "024f8778703db1e5f7bd93dcdb7e2b53",
    "id": null,
    "metadata": {},
    "name": "NewTicketPageMutation",
    "operationKind": "mutation",
    "text": "mutation NewTicketPageMutation(\n  $input: CreateTicketInput!\n) {\n  createTicket(input: $input) {\n    ticket {\n      id\n      title\n      ...TicketRow_ticket\n    }\n  }\n}\n\nfragment TicketRow_ticket on Ticket {\n  id\n  ticketId\n  title\n  status\n  priority\n  version\n  createdAt\n  requester {\n    username\n    id\n  }\n  assignee {\n    username\n    id\n  }\n}\n"
  }
};
})();

(node as any).hash = "ef988062900b9605476d911f0857477c";

export default node;
