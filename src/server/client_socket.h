// Whether the client of a request is still connected. Debian's cpp-httplib
// (0.11) gives a handler no view of its connection, yet a whole (non-streamed)
// answer must stop generating when its client hangs up, as a stream does when
// a write fails; so the handler finds its socket from the peer address.
#pragma once

#include <string>

namespace seam::server {

// The connected TCP socket of this process whose local port is `local_port`
// and whose peer is `remote_addr`:`remote_port` (as httplib's Request spells
// them), or -1. The socket stays the request's while its handler runs:
// httplib closes it only after the handler returns.
int find_client_socket(int local_port, const std::string& remote_addr, int remote_port);

// False once the peer has closed or reset the connection. Bytes waiting to be
// read (a pipelined request) mean it is still there.
bool client_connected(int fd);

}  // namespace seam::server
