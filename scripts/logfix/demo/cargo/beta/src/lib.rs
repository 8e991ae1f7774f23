//! Second crate with a test of the same path as in `alpha`.

#[cfg(test)]
mod tests {
    #[test]
    fn same_name() {
        panic!("beta's same_name fails");
    }

    #[test]
    fn beta_passes() {}
}
