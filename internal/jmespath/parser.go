package jmespath

import "github.com/cairn-go/cairn/internal/jsvalue"

type nodeType int

const (
	nField nodeType = iota
	nSubexpression
	nIndexExpression
	nPipe
	nComparator
	nCurrent
	nIdentity
	nExpref
	nFunction
	nFilterProjection
	nFlatten
	nIndex
	nSlice
	nLiteral
	nMultiSelectObject
	nMultiSelectList
	nOr
	nAnd
	nNot
	nProjection
	nValueProjection
)

type node struct {
	typ      nodeType
	name     string // field name, function name, key of a key/value pair
	cmp      tokType
	index    int
	slice    [3]*int
	lit      jsvalue.Value
	children []*node
	keys     []string // multi-select object keys, parallel to children
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) cur() token { return p.toks[p.pos] }
func (p *parser) lookahead(n int) tokType {
	if p.pos+n < len(p.toks) {
		return p.toks[p.pos+n].typ
	}
	return tEOF
}
func (p *parser) advance() { p.pos++ }

func (p *parser) match(t tokType) error {
	if p.cur().typ != t {
		return syntaxErr(p.cur().pos, "unexpected token")
	}
	p.advance()
	return nil
}

func parse(expr string) (*node, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	n, err := p.expression(0)
	if err != nil {
		return nil, err
	}
	if p.cur().typ != tEOF {
		return nil, syntaxErr(p.cur().pos, "unexpected token after expression")
	}
	return n, nil
}

func (p *parser) expression(rbp int) (*node, error) {
	tok := p.cur()
	p.advance()
	left, err := p.nud(tok)
	if err != nil {
		return nil, err
	}
	for rbp < bindingPower[p.cur().typ] {
		tok := p.cur()
		p.advance()
		left, err = p.led(tok, left)
		if err != nil {
			return nil, err
		}
	}
	return left, nil
}

func identity() *node { return &node{typ: nIdentity} }

func (p *parser) nud(tok token) (*node, error) {
	switch tok.typ {
	case tLiteral:
		return &node{typ: nLiteral, lit: tok.lit}, nil
	case tUnquoted:
		return &node{typ: nField, name: tok.str}, nil
	case tQuoted:
		if p.cur().typ == tLparen {
			return nil, syntaxErr(tok.pos, "quoted identifier not allowed for function names")
		}
		return &node{typ: nField, name: tok.str}, nil
	case tStar:
		right := identity()
		if p.cur().typ != tRbracket {
			var err error
			if right, err = p.projectionRHS(bindingPower[tStar]); err != nil {
				return nil, err
			}
		}
		return &node{typ: nValueProjection, children: []*node{identity(), right}}, nil
	case tFilter:
		return p.led(tok, identity())
	case tLbrace:
		return p.multiSelectHash()
	case tLparen:
		n, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		return n, p.match(tRparen)
	case tFlatten:
		left := &node{typ: nFlatten, children: []*node{identity()}}
		right, err := p.projectionRHS(bindingPower[tFlatten])
		if err != nil {
			return nil, err
		}
		return &node{typ: nProjection, children: []*node{left, right}}, nil
	case tNot:
		n, err := p.expression(bindingPower[tNot])
		if err != nil {
			return nil, err
		}
		return &node{typ: nNot, children: []*node{n}}, nil
	case tLbracket:
		switch {
		case p.cur().typ == tNumber || p.cur().typ == tColon:
			right, err := p.indexExpression()
			if err != nil {
				return nil, err
			}
			return p.projectIfSlice(identity(), right)
		case p.cur().typ == tStar && p.lookahead(1) == tRbracket:
			p.advance()
			p.advance()
			right, err := p.projectionRHS(bindingPower[tStar])
			if err != nil {
				return nil, err
			}
			return &node{typ: nProjection, children: []*node{identity(), right}}, nil
		default:
			return p.multiSelectList()
		}
	case tCurrent:
		return &node{typ: nCurrent}, nil
	case tExpref:
		n, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		return &node{typ: nExpref, children: []*node{n}}, nil
	}
	return nil, syntaxErr(tok.pos, "unexpected token")
}

func (p *parser) led(tok token, left *node) (*node, error) {
	switch tok.typ {
	case tDot:
		if p.cur().typ != tStar {
			right, err := p.dotRHS(bindingPower[tDot])
			if err != nil {
				return nil, err
			}
			if left.typ == nSubexpression {
				left.children = append(left.children, right)
				return left, nil
			}
			return &node{typ: nSubexpression, children: []*node{left, right}}, nil
		}
		p.advance()
		right, err := p.projectionRHS(bindingPower[tDot])
		if err != nil {
			return nil, err
		}
		return &node{typ: nValueProjection, children: []*node{left, right}}, nil
	case tPipe:
		right, err := p.expression(bindingPower[tPipe])
		if err != nil {
			return nil, err
		}
		return &node{typ: nPipe, children: []*node{left, right}}, nil
	case tOr, tAnd:
		right, err := p.expression(bindingPower[tok.typ])
		if err != nil {
			return nil, err
		}
		t := nOr
		if tok.typ == tAnd {
			t = nAnd
		}
		return &node{typ: t, children: []*node{left, right}}, nil
	case tLparen:
		if left.typ != nField {
			return nil, syntaxErr(tok.pos, "invalid function name")
		}
		fn := &node{typ: nFunction, name: left.name}
		for p.cur().typ != tRparen {
			arg, err := p.expression(0)
			if err != nil {
				return nil, err
			}
			if p.cur().typ == tComma {
				if err := p.match(tComma); err != nil {
					return nil, err
				}
			}
			fn.children = append(fn.children, arg)
		}
		return fn, p.match(tRparen)
	case tFilter:
		cond, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		if err := p.match(tRbracket); err != nil {
			return nil, err
		}
		var right *node
		if p.cur().typ == tFlatten {
			right = identity()
		} else if right, err = p.projectionRHS(bindingPower[tFilter]); err != nil {
			return nil, err
		}
		return &node{typ: nFilterProjection, children: []*node{left, right, cond}}, nil
	case tFlatten:
		l := &node{typ: nFlatten, children: []*node{left}}
		right, err := p.projectionRHS(bindingPower[tFlatten])
		if err != nil {
			return nil, err
		}
		return &node{typ: nProjection, children: []*node{l, right}}, nil
	case tEQ, tNE, tGT, tGTE, tLT, tLTE:
		right, err := p.expression(bindingPower[tok.typ])
		if err != nil {
			return nil, err
		}
		return &node{typ: nComparator, cmp: tok.typ, children: []*node{left, right}}, nil
	case tLbracket:
		if p.cur().typ == tNumber || p.cur().typ == tColon {
			right, err := p.indexExpression()
			if err != nil {
				return nil, err
			}
			return p.projectIfSlice(left, right)
		}
		if err := p.match(tStar); err != nil {
			return nil, err
		}
		if err := p.match(tRbracket); err != nil {
			return nil, err
		}
		right, err := p.projectionRHS(bindingPower[tStar])
		if err != nil {
			return nil, err
		}
		return &node{typ: nProjection, children: []*node{left, right}}, nil
	}
	return nil, syntaxErr(tok.pos, "unexpected token")
}

func (p *parser) indexExpression() (*node, error) {
	if p.cur().typ == tColon || p.lookahead(1) == tColon {
		return p.sliceExpression()
	}
	tok := p.cur()
	if err := p.match(tNumber); err != nil {
		return nil, err
	}
	if err := p.match(tRbracket); err != nil {
		return nil, err
	}
	return &node{typ: nIndex, index: tok.num}, nil
}

func (p *parser) sliceExpression() (*node, error) {
	n := &node{typ: nSlice}
	idx := 0
	for p.cur().typ != tRbracket && idx < 3 {
		switch p.cur().typ {
		case tColon:
			idx++
			if idx == 3 {
				return nil, syntaxErr(p.cur().pos, "too many colons in slice")
			}
			p.advance()
		case tNumber:
			v := p.cur().num
			n.slice[idx] = &v
			p.advance()
		default:
			return nil, syntaxErr(p.cur().pos, "unexpected token in slice")
		}
	}
	if n.slice[2] != nil && *n.slice[2] == 0 {
		return nil, syntaxErr(p.cur().pos, "slice step cannot be 0")
	}
	return n, p.match(tRbracket)
}

func (p *parser) projectIfSlice(left, right *node) (*node, error) {
	ie := &node{typ: nIndexExpression, children: []*node{left, right}}
	if right.typ == nSlice {
		rhs, err := p.projectionRHS(bindingPower[tStar])
		if err != nil {
			return nil, err
		}
		return &node{typ: nProjection, children: []*node{ie, rhs}}, nil
	}
	return ie, nil
}

func (p *parser) projectionRHS(bp int) (*node, error) {
	switch t := p.cur().typ; {
	case bindingPower[t] < 10:
		return identity(), nil
	case t == tLbracket || t == tFilter:
		return p.expression(bp)
	case t == tDot:
		p.advance()
		return p.dotRHS(bp)
	}
	return nil, syntaxErr(p.cur().pos, "syntax error after projection")
}

func (p *parser) dotRHS(bp int) (*node, error) {
	switch p.cur().typ {
	case tQuoted, tUnquoted, tStar:
		return p.expression(bp)
	case tLbracket:
		p.advance()
		return p.multiSelectList()
	case tLbrace:
		p.advance()
		return p.multiSelectHash()
	}
	return nil, syntaxErr(p.cur().pos, "expected identifier, '[', '{' or '*' after '.'")
}

func (p *parser) multiSelectList() (*node, error) {
	n := &node{typ: nMultiSelectList}
	for {
		e, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, e)
		if p.cur().typ == tRbracket {
			break
		}
		if err := p.match(tComma); err != nil {
			return nil, err
		}
	}
	return n, p.match(tRbracket)
}

func (p *parser) multiSelectHash() (*node, error) {
	n := &node{typ: nMultiSelectObject}
	for {
		key := p.cur()
		if key.typ != tQuoted && key.typ != tUnquoted {
			return nil, syntaxErr(key.pos, "expected key in multi-select hash")
		}
		p.advance()
		if err := p.match(tColon); err != nil {
			return nil, err
		}
		v, err := p.expression(0)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, key.str)
		n.children = append(n.children, v)
		if p.cur().typ == tComma {
			p.advance()
			continue
		}
		if err := p.match(tRbrace); err != nil {
			return nil, err
		}
		return n, nil
	}
}
