/// Doubles.
///
/// ```
/// assert_eq!(wscore::double(2), 4);
/// ```
pub fn double(x: i32) -> i32 {
    x * 2
}

#[cfg(test)]
mod tests {
    #[test]
    fn doubles() {
        assert_eq!(super::double(3), 6);
    }

    #[test]
    #[ignore]
    fn slow() {}

    #[test]
    fn wrong() {
        assert_eq!(super::double(3), 7, "three doubled");
    }
}
