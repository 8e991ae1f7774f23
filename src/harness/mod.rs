//! Agent harnesses: how agents run, and the scrubbing of everything they leave behind.

pub mod scrub;
