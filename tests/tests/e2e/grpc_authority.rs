//! gRPC clients that name the socket path as the HTTP/2 `:authority`:
//! the bytes current grpcio (the path percent-encoded) and grpc-java or
//! older grpcurl (the path as it is) put on the wire, written frame by
//! frame to the real daemon's socket. Both calls of each connection (the
//! second one indexing the authority from the client's HPACK table, as
//! real clients do) must be answered.

use git_agent_tests::TestEnv;
use prost::Message;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).unwrap();
    let mut out = length.to_be_bytes()[1..].to_vec();
    out.extend([kind, flags]);
    out.extend(stream.to_be_bytes());
    out.extend(payload);
    out
}

/// The request headers of a grpcio unary call.
fn grpcio_headers(authority: &str) -> Vec<(&'static [u8], Vec<u8>)> {
    vec![
        (b":scheme", b"http".to_vec()),
        (b":method", b"POST".to_vec()),
        (b":authority", authority.as_bytes().to_vec()),
        (b":path", b"/gitagent.v1.GitAgent/Hello".to_vec()),
        (b"te", b"trailers".to_vec()),
        (b"content-type", b"application/grpc".to_vec()),
        (b"user-agent", b"grpc-python/1.74.0 grpc-c/50.0.0 (linux; chttp2)".to_vec()),
        (b"grpc-accept-encoding", b"identity, deflate, gzip".to_vec()),
    ]
}

/// What came back on one stream.
#[derive(Default, Debug)]
struct Answer {
    headers: Vec<(String, String)>,
    data: Vec<u8>,
    ended: bool,
}

fn read_frame(stream: &mut UnixStream) -> (u8, u8, u32, Vec<u8>) {
    let mut head = [0u8; 9];
    stream.read_exact(&mut head).expect("a frame from the daemon");
    let length = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let mut payload = vec![0u8; length];
    stream.read_exact(&mut payload).unwrap();
    (head[3], head[4], u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff, payload)
}

/// Two Hello calls on one connection with this authority; the answers of
/// streams 1 and 3.
fn two_hellos(socket: &std::path::Path, authority: &str) -> HashMap<u32, Answer> {
    let mut connection = UnixStream::connect(socket).unwrap();
    connection.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut encoder = loona_hpack::Encoder::new();
    let mut sent = PREFACE.to_vec();
    sent.extend(frame(SETTINGS, 0, 0, &[]));
    // An empty HelloRequest, length-prefixed as gRPC frames messages.
    let message = [0u8, 0, 0, 0, 0];
    for stream in [1, 3] {
        let headers = grpcio_headers(authority);
        let block = encoder.encode(headers.iter().map(|(name, value)| (*name, &value[..])));
        sent.extend(frame(HEADERS, END_HEADERS, stream, &block));
        sent.extend(frame(DATA, END_STREAM, stream, &message));
    }
    connection.write_all(&sent).unwrap();

    let mut decoder = loona_hpack::Decoder::new();
    let mut answers: HashMap<u32, Answer> = HashMap::new();
    while !(answers.get(&1).is_some_and(|a| a.ended) && answers.get(&3).is_some_and(|a| a.ended)) {
        let (kind, flags, stream, payload) = read_frame(&mut connection);
        match kind {
            SETTINGS if flags & ACK == 0 => connection.write_all(&frame(SETTINGS, ACK, 0, &[])).unwrap(),
            HEADERS => {
                assert_eq!(flags & END_HEADERS, END_HEADERS, "the daemon's headers fit one frame");
                let answer = answers.entry(stream).or_default();
                for (name, value) in decoder.decode(&payload).expect("the daemon's header block decodes") {
                    answer.headers.push((String::from_utf8(name).unwrap(), String::from_utf8(value).unwrap()));
                }
                answer.ended |= flags & END_STREAM != 0;
            }
            DATA => {
                let answer = answers.entry(stream).or_default();
                answer.data.extend(payload);
                answer.ended |= flags & END_STREAM != 0;
            }
            RST_STREAM => {
                panic!("the daemon reset stream {stream} (error code {payload:?}) for :authority {authority}")
            }
            GOAWAY => panic!("the daemon sent GOAWAY {payload:?} for :authority {authority}"),
            _ => {}
        }
    }
    answers
}

#[test]
fn grpc_clients_that_send_the_socket_path_as_authority_are_served() {
    let env = TestEnv::new();
    env.run_in(&env.work(), &["project_id"]).success();
    let pid = env.daemon_pid().expect("a daemon answers");
    let socket = env.socket_path();
    let path = socket.to_str().unwrap();
    // grpcio since 1.57 percent-encodes the path; grpc-java and grpcurl
    // before 1.9 send it as it is.
    let encoded = path.replace('/', "%2F");
    for authority in [encoded.as_str(), path] {
        let answers = two_hellos(&socket, authority);
        for stream in [1, 3] {
            let answer = &answers[&stream];
            let header =
                |name: &str| answer.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
            assert_eq!(header(":status"), Some("200"), "{authority}: {answer:?}");
            assert_eq!(header("grpc-status"), Some("0"), "{authority}: {answer:?}");
            assert!(answer.data.len() > 5, "{authority}: no reply message: {answer:?}");
            assert_eq!(answer.data[0], 0, "an uncompressed message");
            let length = u32::from_be_bytes(answer.data[1..5].try_into().unwrap()) as usize;
            assert_eq!(answer.data.len(), 5 + length);
            let reply = gitagent_proto::v1::HelloReply::decode(&answer.data[5..]).unwrap();
            assert_eq!(reply.pid, pid, "{authority}");
            assert_eq!(reply.protocol_version, gitagent_proto::PROTOCOL_VERSION);
        }
    }
    // The daemon's own client still works on the same socket.
    env.run_in(&env.work(), &["project_id"]).success();
}
