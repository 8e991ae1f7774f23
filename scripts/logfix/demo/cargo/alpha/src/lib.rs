//! Demo crate for the log-parser fixtures.

/// Adds two numbers.
///
/// ```
/// assert_eq!(alpha::add(1, 2), 3);
/// ```
///
/// ```should_panic
/// panic!("expected");
/// ```
///
/// ```
/// assert_eq!(alpha::add(1, 1), 3);
/// ```
///
/// ```ignore
/// not rust
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_name() {
        assert_eq!(super::add(2, 2), 4);
    }

    #[test]
    fn broken() {
        assert_eq!(super::add(2, 2), 5, "arithmetic is hard");
    }

    #[test]
    #[ignore = "slow test"]
    fn slow() {}

    #[test]
    #[ignore]
    fn ignored_without_reason() {}

    #[test]
    #[should_panic(expected = "boom")]
    fn panics_as_expected() {
        panic!("boom");
    }

    #[test]
    #[should_panic(expected = "other")]
    fn panics_with_wrong_message() {
        panic!("boom");
    }

    #[test]
    fn prints_output() {
        println!("test ... ok (this line is output, not a result)");
    }

    #[test]
    fn ünïcode_name() {}

    mod nested {
        #[test]
        fn deep() {}
    }
}
