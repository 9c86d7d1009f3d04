//! Generates the gitagent.v1 bindings with a pure-Rust protobuf parser, so a
//! fresh machine needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/gitagent/v1/gitagent.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    // The invocation carries the caller's environment, credentials
    // included: its `Debug` is written by hand (src/lib.rs) to show names
    // only.
    tonic_prost_build::configure().skip_debug([".gitagent.v1.Invocation"]).compile_fds(descriptors)?;
    Ok(())
}
