//! Generates the gitagent.v1 bindings with a pure-Rust protobuf parser, so a
//! fresh machine needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/gitagent/v1/gitagent.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
