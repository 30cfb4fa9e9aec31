//! TransactWriteItems: each action rendered with its expressions, the whole sent with a
//! client request token per send.

use aws_sdk_dynamodb::types::{
    self as sdk, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};

use crate::store::{StoreError, StoreResult, TransactAction};

use super::convert::{to_sdk_item, Expressions};
use super::errors::{build_error, store_error};
use super::{record_capacity, send_write, DynamoEngine};

impl DynamoEngine {
    pub(super) fn transact_item(&self, action: TransactAction) -> StoreResult<TransactWriteItem> {
        let on_failure = |asked: bool| asked.then_some(ReturnValuesOnConditionCheckFailure::AllOld);
        let item = match action {
            TransactAction::Put(p) => {
                let mut ex = Expressions::default();
                let condition = p.condition.as_ref().map(|c| ex.condition(c));
                let (names, values) = ex.into_maps();
                let put = sdk::Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(to_sdk_item(p.item)))
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_return_values_on_condition_check_failure(on_failure(
                        p.return_old_on_condition_failure,
                    ))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().put(put)
            }
            TransactAction::Update(u) => {
                let mut ex = Expressions::default();
                let Some(update) = ex.update(&u.update) else {
                    // TransactWriteItems requires an UpdateExpression; there is no no-op one.
                    return Err(StoreError::Validation(
                        "1 validation error detected: Value null at 'transactItems.member.update.updateExpression' failed to satisfy constraint: Member must not be null".into(),
                    ));
                };
                let condition = u.condition.as_ref().map(|c| ex.condition(c));
                let (names, values) = ex.into_maps();
                let update = sdk::Update::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.key(&u.key)))
                    .update_expression(update)
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_return_values_on_condition_check_failure(on_failure(
                        u.return_old_on_condition_failure,
                    ))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().update(update)
            }
            TransactAction::Delete(d) => {
                let mut ex = Expressions::default();
                let condition = d.condition.as_ref().map(|c| ex.condition(c));
                let (names, values) = ex.into_maps();
                let delete = sdk::Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.key(&d.key)))
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_return_values_on_condition_check_failure(on_failure(
                        d.return_old_on_condition_failure,
                    ))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().delete(delete)
            }
            TransactAction::ConditionCheck(c) => {
                let mut ex = Expressions::default();
                let condition = ex.condition(&c.condition);
                let (names, values) = ex.into_maps();
                let check = sdk::ConditionCheck::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.key(&c.key)))
                    .condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_return_values_on_condition_check_failure(on_failure(
                        c.return_old_on_condition_failure,
                    ))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().condition_check(check)
            }
        };
        Ok(item.build())
    }

    /// TransactWriteItems, sent again by [`retry_conflicts`] when DynamoDB cancelled it
    /// only because another write touched one of its items at the same moment (reasons
    /// all `None` or `TransactionConflict`).
    pub(super) async fn transact(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        let items = actions
            .into_iter()
            .map(|a| self.transact_item(a))
            .collect::<StoreResult<Vec<_>>>()?;
        self.transact_items(items).await
    }

    /// TransactWriteItems of rendered actions (of this table or its siblings').
    pub(super) async fn transact_items(&self, items: Vec<TransactWriteItem>) -> StoreResult<()> {
        let out = send_write("TransactWriteItems", || async {
            self.client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                // One token per send, the same across the SDK's attempts of it: an attempt
                // that timed out after DynamoDB applied it is then answered with success
                // when sent again, instead of failing its own conditions.
                .client_request_token(ulid::Ulid::new().to_string())
                .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
                .send()
                .await
                .map_err(|e| store_error(&self.table, e))
        })
        .await?;
        record_capacity("TransactWriteItems", out.consumed_capacity());
        Ok(())
    }
}
