/**
 * @generated SignedSource<<ef04af28ecaf1b98b295693728fbed19>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type OrderStatus = "CANCELLED" | "DELIVERED" | "PAID" | "PLACED" | "SHIPPED" | "%future added value";
export type UpdateOrderStatusInput = {
  expectedVersion: number;
  orderId: string;
  status: OrderStatus;
};
export type OrderPageStatusMutation$variables = {
  input: UpdateOrderStatusInput;
};
export type OrderPageStatusMutation$data = {
  readonly updateOrderStatus: {
    readonly order: {
      readonly id: string;
      readonly status: OrderStatus;
      readonly version: number;
    };
  };
};
export type OrderPageStatusMutation = {
  response: OrderPageStatusMutation$data;
  variables: OrderPageStatusMutation$variables;
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
    "concreteType": "UpdateOrderStatusPayload",
    "kind": "LinkedField",
    "name": "updateOrderStatus",
    "plural": false,
    "selections": [
      {
        "alias": null,
        "args": null,
        "concreteType": "Order",
        "kind": "LinkedField",
        "name": "order",
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
            "name": "status",
            "storageKey": null
          },
          {
            "alias": null,
            "args": null,
            "kind": "ScalarField",
            "name": "version",
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
    "name": "OrderPageStatusMutation",
    "selections": (v1/*:: as any*/),
    "type": "Mutation",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "OrderPageStatusMutation",
    "selections": (v1/*:: as any*/)
  },
  "params": {
    "cacheID": "f548b115c2c45a531c05929d8dc52613",
    "id": null,
    "metadata": {},
    "name": "OrderPageStatusMutation",
    "operationKind": "mutation",
    "text": "mutation OrderPageStatusMutation(\n  $input: UpdateOrderStatusInput!\n) {\n  updateOrderStatus(input: $input) {\n    order {\n      id\n      status\n      version\n    }\n  }\n}\n"
  }
};
})();

(node as any).hash = "cef853580a40cf9c0495e7b4ec6955fe";

export default node;
