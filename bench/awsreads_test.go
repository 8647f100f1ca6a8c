package bench

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB Local reports no read capacity for a key that matches no item, while
// AWS bills such a read like a read of a small item. So the meter computes read
// units itself, by the rules AWS documents for on-demand tables:
//
//   - GetItem and each key of BatchGetItem: one read unit per started 4 KB of the
//     item, at least one whether or not the item exists; half that for an
//     eventually consistent read;
//   - Query: one read unit per started 4 KB of all the items it returns together,
//     at least one; half for an eventually consistent query (every index query).
//
// Other read requests keep what DynamoDB Local reported.

// readUnits returns the read units of one request and true, or false for a request
// it does not price.
func readUnits(params, result any) (float64, bool) {
	rate := func(consistent *bool) float64 {
		if aws.ToBool(consistent) {
			return 1
		}
		return 0.5
	}
	switch p := params.(type) {
	case *dynamodb.GetItemInput:
		out, _ := result.(*dynamodb.GetItemOutput)
		var item map[string]ddbtypes.AttributeValue
		if out != nil {
			item = out.Item
		}
		return float64(readKB(itemBytes(item))) * rate(p.ConsistentRead), true
	case *dynamodb.BatchGetItemInput:
		out, _ := result.(*dynamodb.BatchGetItemOutput)
		units := 0.0
		for table, keys := range p.RequestItems {
			read := len(keys.Keys)
			var got []map[string]ddbtypes.AttributeValue
			if out != nil {
				got = out.Responses[table]
				if un, ok := out.UnprocessedKeys[table]; ok {
					read -= len(un.Keys)
				}
			}
			n := 0
			for _, item := range got {
				n += readKB(itemBytes(item))
			}
			n += max(0, read-len(got)) // keys that matched no item
			units += float64(n) * rate(keys.ConsistentRead)
		}
		return units, true
	case *dynamodb.QueryInput:
		out, _ := result.(*dynamodb.QueryOutput)
		size := 0
		if out != nil {
			for _, item := range out.Items {
				size += itemBytes(item)
			}
		}
		return float64(readKB(size)) * rate(p.ConsistentRead), true
	}
	return 0, false
}

// readKB is the number of started 4 KB blocks of size bytes, at least one.
func readKB(size int) int { return max(1, (size+4095)/4096) }
