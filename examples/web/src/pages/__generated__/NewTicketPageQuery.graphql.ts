/**
 * @generated SignedSource<<d75508888d8546132170a34035248da6>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type NewTicketPageQuery$variables = {
  slug: string;
};
export type NewTicketPageQuery$data = {
  readonly organization: {
    readonly id: string;
    readonly users: {
      readonly nodes: ReadonlyArray<{
        readonly id: string;
        readonly name: string;
        readonly username: string;
      }>;
    };
  } | null | undefined;
};
export type NewTicketPageQuery = {
  response: NewTicketPageQuery$data;
  variables: NewTicketPageQuery$variables;
};

const node: ConcreteRequest = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "slug"
  }
],
v1 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "id",
  "storageKey": null
},
v2 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "slug",
        "variableName": "slug"
      }
    ],
    "concreteType": "Organization",
    "kind": "LinkedField",
    "name": "organization",
    "plural": false,
    "selections": [
      (v1/*:: as any*/),
      {
        "alias": null,
        "args": [
          {
            "kind": "Literal",
            "name": "first",
            "value": 50
          }
        ],
        "concreteType": "UserConnection",
        "kind": "LinkedField",
        "name": "users",
        "plural": false,
        "selections": [
          {
            "alias": null,
            "args": null,
            "concreteType": "User",
            "kind": "LinkedField",
            "name": "nodes",
            "plural": true,
            "selections": [
              (v1/*:: as any*/),
              {
                "alias": null,
                "args": null,
                "kind": "ScalarField",
                "name": "username",
                "storageKey": null
              },
              {
                "alias": null,
                "args": null,
                "kind": "ScalarField",
                "name": "name",
                "storageKey": null
              }
            ],
            "storageKey": null
          }
        ],
        "storageKey": "users(first:50)"
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
    "name": "NewTicketPageQuery",
    "selections": (v2/*:: as any*/),
    "type": "Query",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "NewTicketPageQuery",
    "selections": (v2/*:: as any*/)
  },
  "params": {
    "cacheID": "b54316dd5f419e8de58d46de73965af8",
    "id": null,
    "metadata": {},
    "name": "NewTicketPageQuery",
    "operationKind": "query",
    "text": "query NewTicketPageQuery(\n  $slug: String!\n) {\n  organization(slug: $slug) {\n    id\n    users(first: 50) {\n      nodes {\n        id\n        username\n        name\n      }\n    }\n  }\n}\n"
  }
};
})();

(node as any).hash = "e6e110925edc34b68c3202a3f309b6d3";

export default node;
