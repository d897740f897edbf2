fn main() -> std::process::ExitCode {
    dbvs::cli::main()
}
