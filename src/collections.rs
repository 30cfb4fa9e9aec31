//! collections
