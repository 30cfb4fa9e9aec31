//! The embedded engine on `redb`.
