package kiln.conformance;

/**
 * The places where a front end's server library cannot follow the contract ({@link kiln.http.Http}),
 * and so the one list of what the suite lets pass. Each front end names its deviations in
 * {@link FrontEnd}; a test that meets one never skips: it checks the weaker property written here
 * instead, and that property pins what the server does today, so a library upgrade that changes the
 * behaviour fails the suite and the deviation is revisited.
 */
enum Deviation {
    /**
     * Undertow writes response header fields in the order of its internal hash table
     * ({@code io.undertow.util.HeaderMap}), not in the order they were added, and offers no way to
     * choose it. The fields are the contract's: same names, same values, same total head size.
     *
     * <p>Checked instead: the status line exactly, the multiset of header lines (Date's value
     * aside) equal to the template's, and the head's length in bytes equal to the template's.
     * Across front ends, heads compare as status line plus sorted header lines.
     */
    HEADER_ORDER_HASHED,

    /**
     * Jetty 12.1's parser looks the request's HTTP-version up in its table of known versions and
     * answers any other string with 505 before a handler runs, so a malformed version
     * ({@code HTTP/1.x}, not DIGIT "." DIGIT, RFC 9112 section 2.3) gets 505 where the contract says
     * 400. Both throw the same exception with the same message ("Unknown Version") as a well-formed
     * unknown version such as {@code HTTP/9.9} (where 505 is right), and the request line never
     * reaches the error handler, so nothing tells the two apart.
     *
     * <p>Checked instead: exactly 505 with the contract's error head (text body, {@code Connection:
     * close}), then the server closes the connection.
     */
    MALFORMED_VERSION_IS_505,

    /**
     * Jetty (12.1 and 9.4) looks the HTTP-version up in its table of known versions, so
     * {@code HTTP/1.2} is answered 505 before a handler runs, where RFC 9110 section 2.5 says a
     * later minor version of a major version the server implements is processed as the highest
     * minor version it implements (HTTP/1.1), as kiln's own parser and Undertow do. No
     * {@code HttpCompliance} option covers it.
     *
     * <p>Checked instead: exactly 505 with the contract's error head (text body, {@code Connection:
     * close}), then the server closes the connection.
     */
    LATER_MINOR_VERSION_IS_505,

    /**
     * Undertow answers a request that its parser rejects (a malformed request line or header line)
     * by writing the fixed bytes {@code HTTP/1.1 400 Bad Request}, {@code Content-Length: 0},
     * {@code Connection: close} straight to the socket ({@code HttpReadListener}), and a request
     * without {@code Host} through its always-installed {@code HostHeaderHandler}, which ends the
     * exchange with reason phrase {@code No Host Header}, an empty body and {@code Connection: close}
     * before the front end's handler is called. Neither has an option or hook for another response.
     * The same fixed 400 answers a head over its size or field-count limit ({@code MAX_HEADER_SIZE},
     * {@code MAX_HEADERS}), where the contract says 414 or 431.
     *
     * That 400 has no {@code Date} either, which RFC 9110 section 6.6.1 asks of every 4xx response
     * from a server with a clock (and no {@code Server}).
     *
     * <p>Checked instead: status 400 on an HTTP/1.1 status line, exactly the header lines
     * {@code Content-Length: 0} and {@code Connection: close} (any order), no {@code Date}, no body,
     * then the server closes the connection.
     */
    PARSE_ERRORS_BODILESS_400,

    /**
     * Jetty 9.4 (Comsat) takes a bare LF as the end of a request line or header line. RFC 9112
     * section 2.2 lets a recipient do so ("MAY recognize a single LF as a line terminator"), but
     * the contract refuses it with 400, as kiln's own parser, Undertow, and Jetty 12 (configured
     * with {@code HttpCompliance} RFC9110 minus {@code LF_HEADER_TERMINATION}) do: a front end and
     * a proxy before it that disagree on where a line ends disagree on the request. Jetty 9.4's
     * compliance modes have no such section.
     *
     * <p>Checked instead: two pipelined requests whose lines end in bare LF get two 200 answers,
     * the contract's bodies, in order, on a connection that stays open.
     */
    BARE_LF_ACCEPTED,

    /**
     * Jetty (12.1 and 9.4) looks the HTTP-version up case-insensitively, so {@code http/1.1} is
     * served as {@code HTTP/1.1}; RFC 9112 section 2.3 says HTTP-name is case-sensitive, which makes
     * such a request line malformed (400, as kiln's own parser and Undertow answer). No
     * {@code HttpCompliance} violation covers it, and the version string never reaches a handler.
     *
     * <p>Checked instead: the request is served as HTTP/1.1 (200, the contract's body), and the
     * connection stays usable.
     */
    VERSION_NAME_CASE_INSENSITIVE,

    /**
     * Undertow 2.4 unfolds an obsolete line folding (a header line starting with SP or HTAB) into
     * the previous field's value and serves the request. RFC 9112 section 5.2 allows that
     * ("replace each received obs-fold with one or more SP octets") as well as a 400; the contract
     * says 400, as kiln's own parser and Jetty answer. Undertow has no option to refuse it.
     *
     * <p>Checked instead: the request is served (200, the contract's body), and the connection
     * stays usable.
     */
    OBS_FOLD_UNFOLDED,

    /**
     * Undertow's parser maps an HTTP-version it does not know ({@code HTTP/9.9}) to HTTP/1.1
     * ("falling back to HTTP 1.1", {@code RequestParser}) and drops the string it read, so the
     * handler sees {@code exchange.getProtocol()} = HTTP/1.1 and cannot answer 505.
     *
     * <p>Checked instead: the request is served exactly as the same request with HTTP/1.1 (200, the
     * contract's head and body), and the connection stays usable for the next request.
     */
    UNKNOWN_VERSION_SERVED_AS_HTTP_1_1,

    /**
     * The server library parses requests and the front end never reads content (no endpoint takes
     * any), so chunked content cannot be checked for valid framing: the front end refuses every
     * chunked request with 413 and closes, without reading it ({@code kiln.http.spi.RequestParser#refuseRequest}).
     * Kilim's own parser reads and checks chunked content and answers malformed framing with 400.
     *
     * <p>Checked instead: 413, then the server closes the connection.
     */
    CHUNKED_CONTENT_REFUSED_UNREAD,

    /**
     * Undertow's {@code REQUEST_PARSE_TIMEOUT} closes the connection without a response; it has no
     * hook to send 408 first.
     *
     * <p>Checked instead: the connection is closed within the bound, and nothing was sent.
     */
    HEADER_TIMEOUT_CLOSES_SILENTLY,

    /**
     * At {@code --max-connections}, Jetty ({@code NetworkConnectionLimit}, {@code ConnectionLimit})
     * and Undertow (XNIO {@code CONNECTION_HIGH_WATER}) stop accepting: a new connection waits in
     * the kernel's listen backlog, unanswered, until one closes. Kilim accepts it and answers 503.
     * Both keep the descriptors the server uses within the cap.
     *
     * <p>Checked instead: a request on a connection over the cap is not answered while the cap
     * holds, and is answered once connections close.
     */
    CONNECTION_CAP_WAITS_IN_BACKLOG
}
