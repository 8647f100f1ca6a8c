package awsworld_test

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

type ddbAttr = types.AttributeValue

func ddbS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
