package protocol

// Parameters sent in pieces (COM_STMT_SEND_LONG_DATA) are kept by the
// protocol library until the statement is executed, reset or closed, with
// no limit of their own: a connection's pieces together are bounded by
// max_allowed_packet, as one command is (past it, 1153 and the connection
// ends, as for a command too large).

// admitLongData counts n more bytes of long data for statement id and
// reports whether the connection's total stays within limit.
func (c *Conn) admitLongData(id uint32, n, limit int64) bool {
	if c.longData == nil {
		c.longData = map[uint32]int64{}
	}
	c.longData[id] += n
	c.longTotal += n
	return c.longTotal <= limit
}

// longDataUsed forgets statement id's long data (executed or reset).
func (c *Conn) longDataUsed(id uint32) {
	if n, ok := c.longData[id]; ok {
		c.longTotal -= n
		delete(c.longData, id)
	}
}

// StmtKept records the SQL layer's key for statement id (once prepared).
func (c *Conn) StmtKept(id uint32, key string) {
	if _, ok := c.stmts[id]; ok {
		c.stmts[id] = key
	}
}

// StmtClosed uncounts statement id of the connection, if it was counted,
// and lets the SQL layer drop what it kept for it.
func (c *Conn) StmtClosed(id uint32) {
	c.longDataUsed(id)
	if n, ok := c.stmtBytes[id]; ok && c.l.PreparedBytes != nil {
		delete(c.stmtBytes, id)
		c.l.PreparedBytes.Add(-n)
	}
	if key, ok := c.stmts[id]; ok && c.l.Prepared != nil {
		delete(c.stmts, id)
		c.l.Prepared.Add(-1)
		if key != "" && c.l.ReleaseStatement != nil {
			c.l.ReleaseStatement(c.connID, key)
		}
	}
}

// StmtsClosed uncounts every statement of the connection (its session,
// and what the SQL layer kept in it, ends or is replaced).
func (c *Conn) StmtsClosed() {
	if c.l.Prepared != nil {
		c.l.Prepared.Add(-int64(len(c.stmts)))
	}
	c.stmts = nil
	if c.l.PreparedBytes != nil {
		for _, n := range c.stmtBytes {
			c.l.PreparedBytes.Add(-n)
		}
	}
	c.stmtBytes = nil
	c.longData, c.longTotal = nil, 0
}

// StmtAdmitted counts statement id (just prepared, its text n bytes) as
// the connection's: the listener's Prepared and PreparedBytes include it
// until StmtClosed or StmtsClosed. The caller has added it to them.
func (c *Conn) StmtAdmitted(id uint32) {
	if c.stmts == nil {
		c.stmts = map[uint32]string{}
	}
	c.stmts[id] = ""
}

// StmtBytes records the length n of statement id's text, which the caller
// has added to PreparedBytes.
func (c *Conn) StmtBytes(id uint32, n int64) {
	if c.stmtBytes == nil {
		c.stmtBytes = map[uint32]int64{}
	}
	c.stmtBytes[id] = n
}
