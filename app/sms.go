package app

import (
	"log/slog"

	"seckill/auth/sms"
	"seckill/config"
	"seckill/service/account"
)

// codeSender is the login codes' sender of cfg, bounded; nil for the
// development log. It refuses production without a real one.
func codeSender(cfg config.Config, log *slog.Logger) (account.CodeSender, error) {
	if err := cfg.CheckSender(); err != nil {
		return nil, err
	}
	var next sms.Sender
	switch cfg.Sender() {
	case config.SenderWebhook:
		next = sms.NewWebhook(cfg.SMSWebhookURL, cfg.SMSWebhookSecret, sms.DefaultConcurrent)
	case config.SenderTencent:
		t, err := sms.NewTencent(sms.TencentConfig{
			SecretID: cfg.SMSAccessKeyID, SecretKey: cfg.SMSAccessKeySecret, AppID: cfg.SMSAppID,
			SignName: cfg.SMSSignName, Template: cfg.SMSTemplate, Endpoint: cfg.SMSEndpoint, Conns: sms.DefaultConcurrent,
		})
		if err != nil {
			return nil, err
		}
		next = t
	default:
		return nil, nil
	}
	return sms.NewBounded(next, cfg.Sender(), sms.Options{}, log), nil
}
