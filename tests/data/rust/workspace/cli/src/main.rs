fn main() {
    println!("{}", wscore::double(21));
}

#[cfg(test)]
mod tests {
    #[test]
    fn answer() {
        assert_eq!(wscore::double(21), 42);
    }
}
