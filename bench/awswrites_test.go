package bench

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB Local's ConsumedCapacity for TransactWriteItems does not follow the
// item count or sizes (it reports 4 units for a transaction of six small items),
// so the meter computes every write's units itself, by the rules AWS documents for
// on-demand tables, from each written item as stored before and after the request:
//
//   - a Put, Update or Delete of an item costs one write unit per started KB of
//     the larger of its two images (at least one), twice that inside
//     TransactWriteItems, which writes every item in two phases;
//   - every global secondary index whose entry for the item appears, disappears,
//     changes key or changes a projected attribute costs one unit per started KB
//     of the entry (two writes, old and new, when its key changes); index writes
//     are not doubled for transactions;
//   - a refused write (a failed condition, a cancelled transaction) is billed as
//     a write of the item as it is.
//
// The images are read with an unmetered client, so reading them costs the bill
// nothing.

// gsi is one global secondary index of the World's table, as CreateTable makes it.
type gsi struct {
	pk, sk    string
	projected []string
}

var worldIndexes = []gsi{
	{pk: "list_pk", sk: "list_sk", projected: []string{"status"}},
	{pk: "list_group_pk", sk: "list_group_sk", projected: []string{"status"}},
	{pk: "attr_pk", sk: "attr_sk"},
}

// itemWrite is one item a write request touches.
type itemWrite struct {
	table         string
	key           map[string]ddbtypes.AttributeValue
	transactional bool
}

func keyOf(item map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": item["pk"], "sk": item["sk"]}
}

// writesOf lists the items a DynamoDB write request touches; nil for reads.
func writesOf(params any) []itemWrite {
	switch p := params.(type) {
	case *dynamodb.PutItemInput:
		return []itemWrite{{table: aws.ToString(p.TableName), key: keyOf(p.Item)}}
	case *dynamodb.UpdateItemInput:
		return []itemWrite{{table: aws.ToString(p.TableName), key: p.Key}}
	case *dynamodb.DeleteItemInput:
		return []itemWrite{{table: aws.ToString(p.TableName), key: p.Key}}
	case *dynamodb.BatchWriteItemInput:
		var ws []itemWrite
		for table, reqs := range p.RequestItems {
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					ws = append(ws, itemWrite{table: table, key: keyOf(r.PutRequest.Item)})
				case r.DeleteRequest != nil:
					ws = append(ws, itemWrite{table: table, key: r.DeleteRequest.Key})
				}
			}
		}
		return ws
	case *dynamodb.TransactWriteItemsInput:
		var ws []itemWrite
		for _, a := range p.TransactItems {
			switch {
			case a.Put != nil:
				ws = append(ws, itemWrite{table: aws.ToString(a.Put.TableName), key: keyOf(a.Put.Item), transactional: true})
			case a.Update != nil:
				ws = append(ws, itemWrite{table: aws.ToString(a.Update.TableName), key: a.Update.Key, transactional: true})
			case a.Delete != nil:
				ws = append(ws, itemWrite{table: aws.ToString(a.Delete.TableName), key: a.Delete.Key, transactional: true})
			}
			// A ConditionCheck writes nothing; cairn's appends do not use it.
		}
		return ws
	}
	return nil
}

// images reads the current stored item of each write (nil where there is none).
func images(ctx context.Context, db *dynamodb.Client, ws []itemWrite) ([]map[string]ddbtypes.AttributeValue, error) {
	out := make([]map[string]ddbtypes.AttributeValue, len(ws))
	for i, w := range ws {
		got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.table), Key: w.key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		out[i] = got.Item
	}
	return out, nil
}

// writeUnits is the write units one item's write costs, by the rules above.
func writeUnits(before, after map[string]ddbtypes.AttributeValue, transactional bool) float64 {
	units := kbUnits(max(itemBytes(before), itemBytes(after)))
	if transactional {
		units *= 2
	}
	for _, ix := range worldIndexes {
		units += indexUnits(ix, before, after)
	}
	return float64(units)
}

func indexUnits(ix gsi, before, after map[string]ddbtypes.AttributeValue) int {
	entry := func(item map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
		if item[ix.pk] == nil || item[ix.sk] == nil {
			return nil
		}
		e := map[string]ddbtypes.AttributeValue{"pk": item["pk"], "sk": item["sk"], ix.pk: item[ix.pk], ix.sk: item[ix.sk]}
		for _, a := range ix.projected {
			if v := item[a]; v != nil {
				e[a] = v
			}
		}
		return e
	}
	old, cur := entry(before), entry(after)
	switch {
	case old == nil && cur == nil:
		return 0
	case old == nil:
		return kbUnits(itemBytes(cur))
	case cur == nil:
		return kbUnits(itemBytes(old))
	case !sameValue(old[ix.pk], cur[ix.pk]) || !sameValue(old[ix.sk], cur[ix.sk]):
		return kbUnits(itemBytes(old)) + kbUnits(itemBytes(cur))
	}
	for _, a := range ix.projected {
		if !sameValue(old[a], cur[a]) {
			return kbUnits(itemBytes(cur))
		}
	}
	return 0
}

func kbUnits(size int) int { return max(1, (size+1023)/1024) }

// itemBytes is an item's size as DynamoDB counts it: each attribute's name plus
// its value (strings and binaries by length, numbers one byte per two significant
// digits plus one, booleans and nulls one byte, sets by their members, lists and
// maps three bytes plus one per element plus their elements). Zero for no item.
func itemBytes(item map[string]ddbtypes.AttributeValue) int {
	if item == nil {
		return 0
	}
	size := 0
	for name, v := range item {
		size += len(name) + valueBytes(v)
	}
	return size
}

func valueBytes(v ddbtypes.AttributeValue) int {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberN:
		return numberBytes(v.Value)
	case *ddbtypes.AttributeValueMemberB:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberBOOL, *ddbtypes.AttributeValueMemberNULL:
		return 1
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberBytes(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueBytes(e)
		}
		return n
	}
	return 0
}

func numberBytes(s string) int {
	digits := 0
	for _, c := range s {
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

func sameValue(a, b ddbtypes.AttributeValue) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch a := a.(type) {
	case *ddbtypes.AttributeValueMemberS:
		b, ok := b.(*ddbtypes.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *ddbtypes.AttributeValueMemberN:
		b, ok := b.(*ddbtypes.AttributeValueMemberN)
		return ok && a.Value == b.Value
	}
	return valueBytes(a) == valueBytes(b) // other types never key or project an index here
}
