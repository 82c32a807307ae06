package handler

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/model"
	"seckill/service/account"
)

// codeSent is the answer of POST /user/code: data is the code in
// development only; sentTo names where it went, the phone masked;
// resendAfter is the phone's cooldown in whole seconds (0 when none): the
// next code to this phone is refused until then, so a client can count it
// down from the first send.
type codeSent struct {
	Envelope
	SentTo      string `json:"sentTo"`
	ResendAfter int64  `json:"resendAfter"`
}

// sendCode reads the phone from the query only; the client address is the
// peer's, or what a trusted proxy says (TrustedProxies).
func (a userAPI) sendCode(c *gin.Context) {
	phone := c.Query("phone")
	code, err := a.Users.SendCode(c.Request.Context(), phone, c.ClientIP())
	if err != nil {
		a.fail(c, err)
		return
	}
	env := codeSent{Envelope: Envelope{Success: true}, SentTo: account.MaskPhone(phone)}
	if d := a.Users.Cooldown(); d > 0 {
		env.ResendAfter = model.RetryAfterSeconds(d)
	}
	if a.Development {
		env.Data = code
	}
	c.JSON(http.StatusOK, env)
}
