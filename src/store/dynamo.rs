//! The DynamoDB engine on `aws-sdk-dynamodb`.
