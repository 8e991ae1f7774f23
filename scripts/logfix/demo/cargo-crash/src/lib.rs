//! A test binary that dies in the middle of a test: the JSON log has a `started` event
//! without a result for it.

#[cfg(test)]
mod tests {
    #[test]
    fn a_passes() {}

    #[test]
    fn b_aborts() {
        std::thread::sleep(std::time::Duration::from_millis(300));
        std::process::abort();
    }
}
